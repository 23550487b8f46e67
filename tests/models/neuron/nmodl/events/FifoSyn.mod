: An order-sensitive test synapse: an input event sends two self-events due at one time,
: flag 1 halves g, flag 2 adds 2 w; NEURON delivers them in the order sent.
NEURON { POINT_PROCESS FifoSyn RANGE g, e, i NONSPECIFIC_CURRENT i }
PARAMETER { e = 0 (mV) d = 0.3 (ms) }
ASSIGNED { v (mV) i (nA) g (uS) }
INITIAL { g = 0 }
BREAKPOINT { i = g*(v - e) }
NET_RECEIVE(w) {
  if (flag == 0) {
    g = g + w
    net_send(d, 1)
    net_send(d, 2)
  } else if (flag == 1) {
    g = g*0.5
  } else {
    g = g + 2*w
  }
}
