: a calcium shell writing cai by assignment, a file-level LOCAL, an INCLUDE
NEURON { SUFFIX shell USEION ca READ ica, cai WRITE cai, ica RANGE ca, gca }
INCLUDE "shell.inc"
LOCAL scale
PARAMETER { depth = .1 (um) taur = 20 (ms) cainf = 100e-6 (mM) gca = 0.002 (S/cm2) }
STATE { ca (mM) }
ASSIGNED { v (mV) ica (mA/cm2) cai (mM) drive (mM/ms) }
INITIAL { scale = 10000 ca = cainf cai = ca }
BREAKPOINT { SOLVE state METHOD derivimplicit  ica = gca*open(v)*(v - 120) }
DERIVATIVE state {
    drive = -scale*ica/(2*96485.3*depth)
    if (drive <= 0.) { drive = 0. }
    ca' = drive + (cainf - ca)/taur
    cai = ca
}
