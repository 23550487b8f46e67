NEURON { SUFFIX kinetic NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.001 (S/cm2) e = -80 (mV) vol = 2 }
ASSIGNED { v (mV) i (mA/cm2) a b }
STATE { C O I }
INITIAL { C = 0.9 O = 0.05 I = 0.1 }
BREAKPOINT { SOLVE scheme METHOD sparse  i = g*O*(v - e) }
KINETIC scheme {
    a = 0.1*exp(v/20)  b = 0.05*exp(-v/30)
    COMPARTMENT vol {O}
    ~ C <-> O (a, b)
    ~ O + O <-> I (0.3, 0.02)
    ~ C << (0.001*O)
    CONSERVE C + O + 2I = 1
}
