: a explicit euler equation: the formula nocmodl writes
NEURON { SUFFIX explicit NONSPECIFIC_CURRENT i RANGE g }
PARAMETER { g = 0.0005 (S/cm2) e = -90 (mV) }
ASSIGNED { v (mV) i (mA/cm2) }
STATE { m }
INITIAL { m = 1 }
BREAKPOINT { SOLVE a METHOD euler  i = g*m*(v - e) }
DERIVATIVE a { m' = -m*m*exp((v + 60)/30)/5 }
