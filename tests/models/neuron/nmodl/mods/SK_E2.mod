: SK-type calcium-activated K+ current (Kohler et al. 1996), as in Hay et al. 2011;
: written here from the published equations.

NEURON {
	SUFFIX SK_E2
	USEION k READ ek WRITE ik
	USEION ca READ cai
	RANGE gSK_E2bar, gSK_E2, ik
}

UNITS {
	(mV) = (millivolt)
	(mA) = (milliamp)
	(mM) = (milli/liter)
}

PARAMETER {
	gSK_E2bar = .000001 (mho/cm2)
	zTau = 1 (ms)
}

ASSIGNED {
	v (mV)
	ik (mA/cm2)
	cai (mM)
	ek (mV)
	zInf
	gSK_E2 (S/cm2)
}

STATE {
	z FROM 0 TO 1
}

BREAKPOINT {
	SOLVE states METHOD cnexp
	gSK_E2 = gSK_E2bar * z
	ik = gSK_E2 * (v - ek)
}

DERIVATIVE states {
	rates(cai)
	z' = (zInf - z) / zTau
}

PROCEDURE rates(ca(mM)) {
	if(ca < 1e-7){
		ca = ca + 1e-07
	}
	zInf = 1/(1 + (0.00043 / ca)^4.8)
}

INITIAL {
	rates(cai)
	z = zInf
}
