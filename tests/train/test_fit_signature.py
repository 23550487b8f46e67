"""``fit`` and ``make_train_fn`` spell their shared parameters out (explicit signatures for
readers and IDEs); this keeps the two lists from drifting apart."""

import inspect

from jaxlean.train.fit import fit, make_train_fn

FIT_ONLY = {"progress", "checkpoint", "checkpoint_every", "quick_compile"}
MAKE_ONLY = {"on_step", "on_epoch"}


def test_shared_parameters_agree_in_order_kind_default_and_annotation():
    ours = inspect.signature(fit).parameters
    theirs = inspect.signature(make_train_fn).parameters
    assert set(ours) - set(theirs) == FIT_ONLY
    assert set(theirs) - set(ours) == MAKE_ONLY
    shared = [name for name in ours if name in theirs]
    assert shared == [name for name in theirs if name in ours]
    for name in shared:
        a, b = ours[name], theirs[name]
        assert (a.kind, a.default, a.annotation) == (b.kind, b.default, b.annotation), name
