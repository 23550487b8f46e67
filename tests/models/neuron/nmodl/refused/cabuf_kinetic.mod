: Calcium binding to a buffer as a reaction scheme (after NEURON's cabuf.mod examples);
: written here for jaxlean's tests. jaxlean refuses it: KINETIC is not supported.

NEURON {
	SUFFIX cabuf
	USEION ca READ ica WRITE cai
	RANGE kf, kb, btotal
}

UNITS {
	(mM) = (milli/liter)
	(mA) = (milliamp)
	FARADAY = (faraday) (coulombs)
}

PARAMETER {
	kf = 100 (/mM-ms)
	kb = 0.1 (/ms)
	btotal = 0.01 (mM)
}

ASSIGNED { ica (mA/cm2) }

STATE { cai (mM) buf (mM) cabuf (mM) }

BREAKPOINT { SOLVE scheme METHOD sparse }

KINETIC scheme {
	~ cai + buf <-> cabuf (kf, kb)
}

INITIAL {
	buf = btotal
	cabuf = 0
}
