: A deterministic Tsodyks-Markram synapse: R, u and tsyn kept per connection, set by an
: INITIAL block inside NET_RECEIVE (as ProbUDFsyn2.mod of the corpus, without its random draw).
NEURON { POINT_PROCESS TMSyn RANGE tau, e, i, U, Fac, Dep NONSPECIFIC_CURRENT i }
PARAMETER { tau = 3 (ms) e = 0 (mV) U = 0.5 Fac = 20 (ms) Dep = 100 (ms) }
ASSIGNED { v (mV) i (nA) }
STATE { g (uS) }
INITIAL { g = 0 }
BREAKPOINT {
  SOLVE state METHOD cnexp
  i = g*(v - e)
}
DERIVATIVE state { g' = -g/tau }
NET_RECEIVE(weight, R, u, tsyn (ms)) {
  INITIAL {
    R = 1
    u = U
    tsyn = t
  }
  u = u*exp(-(t - tsyn)/Fac)
  u = u + U*(1 - u)
  R = 1 - (1 - R)*exp(-(t - tsyn)/Dep)
  g = g + weight*u*R
  R = R - u*R
  tsyn = t
}
