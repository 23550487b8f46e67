: An order-sensitive test synapse: an input event adds w and sends a self-event d later,
: which halves g; delivered in the other order the voltage differs by mV.
NEURON { POINT_PROCESS TieSyn RANGE g, e, i NONSPECIFIC_CURRENT i }
PARAMETER { e = 0 (mV) d = 0.3 (ms) }
ASSIGNED { v (mV) i (nA) g (uS) }
INITIAL { g = 0 }
BREAKPOINT { i = g*(v - e) }
NET_RECEIVE(w) {
  if (flag == 0) {
    g = g + w
    net_send(d, 1)
  } else {
    g = g*0.5
  }
}
