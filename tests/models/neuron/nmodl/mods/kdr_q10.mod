TITLE Delayed-rectifier K+ channel with a q10 from PARAMETERs (written for jaxlean's tests)

COMMENT
Mainen & Sejnowski (1996) style: the temperature factor comes from PARAMETERs
q10 and temp, the rates are in alpha/beta form, gbar in pS/um2, and rates()
returns through a FUNCTION with an if/else guard.
ENDCOMMENT

NEURON {
	SUFFIX kdrq
	USEION k READ ek WRITE ik
	RANGE gbar, gk, ik
	GLOBAL q10, temp
}

UNITS {
	(mA) = (milliamp)
	(mV) = (millivolt)
	(pS) = (picosiemens)
	(um) = (micron)
}

PARAMETER {
	gbar = 300   	(pS/um2)
	Ra   = 0.02	(/ms)
	Rb   = 0.002	(/ms)
	tha  = 25	(mV)
	qa   = 9	(mV)
	temp = 23	(degC)
	q10  = 2.3
}

ASSIGNED {
	v (mV)
	celsius (degC)
	ek (mV)
	ik (mA/cm2)
	gk (pS/um2)
	a (/ms)
	b (/ms)
	tadj
}

STATE { n }

INITIAL {
	rates(v)
	n = a/(a + b)
}

BREAKPOINT {
	SOLVE states METHOD cnexp
	gk = gbar*n
	ik = (1e-4) * gk * (v - ek)
}

DERIVATIVE states {
	rates(v)
	n' = a*(1 - n) - b*n
}

PROCEDURE rates(vm (mV)) {
	tadj = q10^((celsius - temp)/10 (degC))
	a = tadj * Ra * trap(vm - tha, qa)
	b = tadj * Rb * trap(-(vm - tha), qa)
}

FUNCTION trap(x (mV), y (mV)) (mV) {
	if (fabs(x/y) < 1e-6) {
		trap = y*(1 - x/y/2)
	} else {
		trap = x/(1 - exp(-x/y))
	}
}
