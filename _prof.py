import time
from jaxlean.models.neuron.nmodl.parser import parse
from jaxlean.models.neuron.nmodl import functions
d='tests/models/neuron/nmodl/mods/hh.mod'
t=time.time(); m=parse(open(d).read(), d); print("parse", time.time()-t)
orig = functions.check_initial
def timed(*a):
    t=time.time(); orig(*a); print("check", time.time()-t)
functions.check_initial = timed
from jaxlean.models.neuron.nmodl.translate import translate
t=time.time(); translate(m); print("translate", time.time()-t)
t=time.time(); translate(m); print("translate2", time.time()-t)
