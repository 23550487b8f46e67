"""The targets of compile and the cable: what each compares, bands, quick flags, headlines."""

import pytest

from jaxlean.bench import BenchResult
from jaxlean.bench._cable_case import _targets as cable_targets
from jaxlean.bench._measure import Timing
from jaxlean.bench.compile import Measured
from jaxlean.bench.compile import _targets as compile_targets


def timing(*samples):
    return Timing(tuple(samples))


def measured(total, step=(1.0, 1.0, 1.0)):
    one = timing(*total)
    return Measured(one, one, one, timing(*step), 10, 0.125, 100)


def compile_result(quick):
    sides = {(4, "baseline"): measured((2.0, 2.2, 2.1)), (4, "jaxlean"): measured((2.0, 2.0, 2.0)),
             (16, "baseline"): measured((4.0, 4.4, 4.2)),
             (16, "by_hand"): measured((2.0, 2.0, 2.0)),
             (16, "jaxlean"): measured((2.1, 2.2, 2.1))}
    result = BenchResult("compile", "t", quick=quick)
    result.compare("depth 4", "loss after 8 steps", "", 0.125, 0.125)
    compile_targets(result, sides, (4, 16), 8)
    return result


def test_compile_targets_quick_claims_and_headline_from_the_figures():
    result = compile_result(quick=True)
    claimed = [t.description for t in result.claimed_targets]
    full_only = [t.description for t in result.full_size_targets]
    assert full_only == ["compile at depth 16: loop+optax / jaxlean (trace+lower+compile)"]
    assert not any("loop+optax / jaxlean (trace" in d for d in claimed)
    flat = next(t for t in result.targets if "flat in depth" in t.description)
    assert flat.value == pytest.approx(2.1 / 2.0) and flat.noise == 0.1
    assert flat.spread == pytest.approx(Timing((2.1 / 2, 2.2 / 2, 2.1 / 2)).spread)
    assert result.headline == (
        "PMM chain, fit(): compile 1.05x from depth 4 to 16 (loop+optax: 2.00x); at depth 16 "
        "2.0x faster than loop+optax, 1.05x a hand-written scan+packed loop.")


def cable_side(gradient_bytes, forward=(1.0, 1.0, 1.0), gradient=(2.5, 2.5, 2.5),
               kept_bytes=None, kept=(2.0, 2.0, 2.0)):
    side = {"forward_bytes": 1, "gradient_bytes": gradient_bytes,
            "forward_s": timing(*forward), "gradient_s": timing(*gradient)}
    if kept_bytes is not None:
        side.update(kept_gradient_bytes=kept_bytes, kept_gradient_s=timing(*kept))
    return side


def test_checkpointing_is_judged_against_jaxs_every_step_gradient():
    ours = {(1000, None): cable_side(6_000, kept_bytes=16_000),
            (1000, "sqrt"): cable_side(1_200, gradient=(2.4, 2.4, 2.4))}
    result = BenchResult("solver", "t", quick=True)
    headline = cable_targets(result, ours, [1000])
    memory, time, per_forward, segments = result.targets
    assert "every-step gradient" in memory.description
    assert memory.value == pytest.approx(1_200 / 16_000) and memory.band == 0
    assert time.value == pytest.approx(2.4 / 2.0) and time.noise == 0.1
    assert not per_forward.quick and per_forward.value == pytest.approx(2.5)
    assert segments.value == pytest.approx(6_000 / 16_000)
    assert headline == ("remat='sqrt' cuts the cable gradient's temp memory to 0.075x "
                        "JAX's every-step gradient at 1,000 steps, for 1.20x its time")
