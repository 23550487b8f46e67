: A slow K+ channel solved with METHOD derivimplicit (written for jaxlean's tests).
NEURON {
	SUFFIX kslow
	USEION k READ ek WRITE ik
	RANGE gbar, ik
}
UNITS { (mA) = (milliamp) (mV) = (millivolt) (S) = (siemens) }
PARAMETER {
	gbar = 0.002 (S/cm2)
	vhalf = -45 (mV)
	k = 8 (mV)
	tau0 = 40 (ms)
}
ASSIGNED { v (mV) ek (mV) ik (mA/cm2) }
STATE { s }
INITIAL { s = sinf(v) }
BREAKPOINT {
	SOLVE states METHOD derivimplicit
	ik = gbar*s*s*(v - ek)
}
DERIVATIVE states {
	LOCAL tau
	tau = tau0/(1 + exp(-(v - vhalf)/20))
	s' = (sinf(v) - s)/tau
}
FUNCTION sinf(v (mV)) {
	sinf = 1/(1 + exp(-(v - vhalf)/k))
}
