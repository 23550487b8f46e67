: A passive leak (as NEURON's pas, under another name so that NEURON compiles it).
NEURON {
	SUFFIX lk
	NONSPECIFIC_CURRENT i
	RANGE g, e
}
UNITS { (mV) = (millivolt) (mA) = (milliamp) (S) = (siemens) }
PARAMETER {
	g = .001 (S/cm2) <0,1e9>
	e = -70 (mV)
}
ASSIGNED { v (mV) i (mA/cm2) }
BREAKPOINT { i = g*(v - e) }
