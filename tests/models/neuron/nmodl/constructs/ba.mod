: BEFORE INITIAL, AFTER INITIAL, AFTER SOLVE and BEFORE STEP, as NEURON orders them
NEURON { SUFFIX ba NONSPECIFIC_CURRENT i RANGE g, q, w, n }
PARAMETER { g = 0.0005 (S/cm2) e = -90 (mV) }
ASSIGNED { v (mV) i (mA/cm2) q w n }
STATE { m }
BEFORE INITIAL { q = 1  n = 0 }
INITIAL { m = 0.2*q  q = q + 1 }
AFTER INITIAL { w = q*0.5 }
BREAKPOINT {
    SOLVE states METHOD cnexp
    i = g*m*w*(v - e)
}
DERIVATIVE states { m' = (w/(1 + exp(-(v + 40)/5)) - m)/5 }
AFTER SOLVE { w = 1 + m + (v + 65)/100 }
BEFORE STEP { n = n + 1  q = t }
