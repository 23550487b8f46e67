"""Timing discipline: alternating samples, medians and spread, carried into the report."""

import math
import time

import jax.numpy as jnp
import pytest

from jaxlean.bench import BenchResult
from jaxlean.bench._measure import (
    Timing,
    aot_compile,
    compile_alternating,
    cpu_seconds,
    time_alternating,
)
from jaxlean.bench._report import comparison_tables


def test_timing_reports_median_and_half_range():
    timing = Timing((1.0, 3.0, 2.0, 2.2))
    assert timing.median == pytest.approx(2.1)
    assert timing.spread == pytest.approx((3.0 - 1.0) / (2 * 2.1))
    assert math.isnan(Timing((1.0,)).spread)
    assert Timing((4.0, 4.0)) / Timing((2.0, 2.0)) == 2.0


def test_time_alternating_interleaves_the_sides():
    order = []

    def side(name, seconds):
        def call():
            order.append(name)
            time.sleep(seconds)
            return jnp.zeros(())
        return call

    slow, fast = time_alternating((side("a", 0.004), ()), (side("b", 0.001), ()), repeats=3,
                                  min_seconds=0)
    calibration, rounds = order[:4], order[4:]
    assert calibration == ["a", "a", "b", "b"] and rounds == ["a", "b"] * 3
    assert len(slow.samples) == len(fast.samples) == 3
    assert slow.median > fast.median


def test_compile_alternating_takes_turns_and_keeps_every_run():
    steps = []
    builds = {"x": (lambda v: v + 1, (jnp.ones(3),)), "y": (lambda v: v * 2, (jnp.ones(3),))}
    compiled = compile_alternating(builds, 2, steps.append)
    assert [s.split(":")[0] for s in steps] == ["x", "y", "x", "y"]
    assert len(compiled["x"].total.samples) == 2
    assert float(compiled["y"].executable(jnp.ones(3))[0]) == 2.0


def test_aot_compile_and_cpu_seconds_count_this_process_cpu_time():
    def busy(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        return jnp.zeros(())

    compiled = aot_compile(lambda v: v * 3, jnp.ones(3))
    assert compiled.trace_lower_cpu_s > 0 and compiled.compile_cpu_s > 0
    cpu = cpu_seconds(lambda: busy(0.02), repeats=2)
    assert len(cpu.samples) == 2 and min(cpu.samples) >= 0.02
    assert cpu_seconds(lambda: (time.sleep(0.02), jnp.zeros(()))[1]).median < 0.01  # not wall


def test_comparison_of_timings_shows_median_and_spread():
    result = BenchResult("t", "timed")
    result.compare("case", "step", "s", Timing((0.010, 0.012, 0.011)), Timing((0.005,)))
    row = result.comparisons[0]
    assert row.baseline == pytest.approx(0.011) and row.ratio == pytest.approx(0.005 / 0.011)
    assert row.baseline_spread == pytest.approx(0.002 / 0.022)
    cells = comparison_tables(result)[0].rows[0].values
    assert cells == ("11.00 ms ±9%", "5.00 ms")
