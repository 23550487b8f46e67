: forms of published files: t in BREAKPOINT and in a SOLVEd block, IF/ELSE, a nested block
: with a LOCAL, VERBATIM reading the ion (carest = _ion_cai;) and a C comment, (faraday) in
: (10000 coulomb)
NEURON { SUFFIX timed USEION ca READ cai NONSPECIFIC_CURRENT i RANGE g, cref }
UNITS { F = (faraday) (10000 coulomb) }
PARAMETER { g = 0.0005 (S/cm2) e = -90 (mV) ton = 50 (ms) }
ASSIGNED { v (mV) i (mA/cm2) cai (mM) cref (mM) }
STATE { m }
INITIAL {
    m = 0.1
    VERBATIM
    // the ion's value, as published files read it
    cref = _ion_cai;
    ENDVERBATIM
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    IF (t > ton) {
        { LOCAL s
          s = 1 + 1000*cref*F
          i = g*m*(v - e)*s }
    } ELSE {
        i = 0
    }
}
DERIVATIVE states { m' = (1 - m)/(10 + t/10) }
