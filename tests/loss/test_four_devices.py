"""The losses' vocabulary-parallel checks on 4 forced CPU devices, in one child process.

Each module's check (``SHARDED_SCRIPT`` next to its one-device tests: distillation, the
policy-gradient loss, token_logprobs / cross_entropy) runs as a section of one child
(:func:`~tests.parallel.sections.run_sections`), so JAX's start with 4 devices is paid once,
not once per module; one test, so xdist's worksteal runs the child on one worker only. A
failing section is reported by name with its traceback, and the others still run.
"""

import pytest

from tests.loss import test_distill, test_policy, test_vocab_parallel
from tests.parallel.sections import check_sections, run_sections

SECTIONS = {
    "distill": test_distill.SHARDED_SCRIPT,
    "policy": test_policy.SHARDED_SCRIPT,
    "vocab_parallel": test_vocab_parallel.SHARDED_SCRIPT,
}


@pytest.mark.slow
def test_vocab_parallel_losses_match_unsharded_on_four_devices(tmp_path):
    stdout = check_sections(run_sections(tmp_path, "import jax\n", SECTIONS, devices=4))
    for name, out in stdout.items():
        assert out.strip().endswith("ok"), (name, out[-3000:])  # each script ran to its end
