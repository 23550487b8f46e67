: arrays and FROM loops
NEURON { SUFFIX arr USEION na READ ena WRITE ina RANGE gnabar }
DEFINE NGATE 2
PARAMETER { gnabar = 0.1 (S/cm2) }
ASSIGNED { v (mV) ena (mV) ina (mA/cm2) inf[NGATE] tau[NGATE] }
STATE { m h }
INITIAL { rates(v) m = inf[0] h = inf[1] }
BREAKPOINT { SOLVE states METHOD cnexp  ina = gnabar*m*m*m*h*(v - ena) }
DERIVATIVE states { rates(v) m' = (inf[0] - m)/tau[0]  h' = (inf[1] - h)/tau[1] }
PROCEDURE rates(v) { LOCAL a, b
    FROM i = 0 TO NGATE - 1 {
        a = alpha(v, i)  b = beta(v, i)
        tau[i] = 1/(a + b)  inf[i] = a/(a + b)
    }
}
FUNCTION alpha(v, i) { if (i == 0) { alpha = 0.1*exp(v/20) } else { alpha = 0.07*exp(-v/20) } }
FUNCTION beta(v, i) { if (i == 0) { beta = 0.2*exp(-v/18) } else { beta = 1/(1 + exp(-v/10)) } }
