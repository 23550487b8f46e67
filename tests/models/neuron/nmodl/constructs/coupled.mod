: coupled cnexp equations: nocmodl advances them one after the other
NEURON { SUFFIX coupled NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.0005 (S/cm2) e = -90 (mV) }
ASSIGNED { v (mV) i (mA/cm2) a b }
STATE { m c }
INITIAL { m = 0 c = 1 }
BREAKPOINT { SOLVE states METHOD cnexp  i = g*m*(v - e) }
DERIVATIVE states {
    a = 0.2*exp((v + 40)/15)  b = 0.1*exp(-(v + 40)/20)
    m' = a*c - b*m
    c' = b*m - a*c
}
