: ELECTRODE_CURRENT in a density mechanism: an inward-positive current, voltage dependent
NEURON { SUFFIX electrode ELECTRODE_CURRENT i RANGE amp }
PARAMETER { amp = 0.0002 (mA/cm2) }
ASSIGNED { v (mV) i (mA/cm2) }
BREAKPOINT { i = amp*(1 + (v + 65)/20) }
