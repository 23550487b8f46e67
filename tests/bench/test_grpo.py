"""The GRPO benchmark's sides compute one objective (Tunix's only where it is installed)."""

import jax.numpy as jnp
import pytest

from jaxlean.bench._measure import SidesDisagreeError
from jaxlean.bench.grpo import (
    check_same,
    full_logits_loss,
    inputs,
    jaxlean_loss,
    tunix_available,
    tunix_loss,
)

SIZE = (2, 8, 16, 64)


def test_chunked_side_equals_full_logits_and_a_wrong_side_is_refused():
    args = inputs(SIZE)
    check_same({"full logits": full_logits_loss, "jaxlean": jaxlean_loss}, args)
    with pytest.raises(SidesDisagreeError, match="wrong's loss"):
        check_same({"full logits": full_logits_loss,
                    "wrong": lambda *a: full_logits_loss(*a) + 1e-2 * jnp.sum(a[0][0, 0])}, args)


@pytest.mark.skipif(not tunix_available(), reason="google-tunix is not installed")
def test_tunix_side_equals_full_logits():
    check_same({"full logits": full_logits_loss, "tunix": tunix_loss()}, inputs(SIZE))
