"""Run one of torch_npu's adapted PyTorch test files on the simulated NPU and record every outcome.

Started by ``oracle_torch_npu_tests.py`` in a fresh interpreter whose working directory is the test
file's directory::

    python tools/oracle_worker.py [--device=privateuse1|cpu] TEST_FILE RESULTS_JSON [PYTEST_ARGS...]

Order matters: the simulator is installed and a ``torch_npu.testing`` module is provided *before*
pytest imports the test file, so ``torch.testing._internal.common_device_type`` sees the ``npu``
PrivateUse1 backend when the file instantiates its device-type tests. The provided
``torch_npu.testing`` does what torch_npu's does for device-generic tests (target PrivateUse1 only,
``onlyCUDA`` -> ``onlyPRIVATEUSE1``, ``TEST_CUDA`` -> ``TEST_PRIVATEUSE1``) and deliberately not its
disabled-test skipping: every test runs, and the driver cross-tabulates with the disabled list.
With ``--device=cpu`` (the driver's control run) the same file's device-generic tests are instantiated
for the CPU instead (the simulator stays installed, so ``import torch_npu`` still works).

RESULTS_JSON gets ``{"outcomes": {nodeid: outcome}, "messages": {nodeid: first line of the error}}``
with outcome one of passed/failed/skipped (a failing setup or teardown counts as failed).
"""
from __future__ import annotations

import json
import os
import sys
import types


def provide_torch_npu_testing(device: str = "privateuse1") -> None:
    """Register a ``torch_npu.testing`` module equivalent to torch_npu's for device-generic tests
    (``device`` "cpu": instantiate them for the CPU instead, whatever ``only_for`` the file names)."""
    import torch_npu  # the simulator's stand-in
    from torch.testing._internal import common_device_type, common_utils

    if device == "cpu":
        instantiate = common_device_type.instantiate_device_type_tests

        def instantiate_for_cpu(generic_test_class, scope, except_for=None, only_for=None, **kwargs):
            return instantiate(generic_test_class, scope, only_for="cpu", **kwargs)

        common_device_type.instantiate_device_type_tests = instantiate_for_cpu
    else:
        os.environ["PYTORCH_TESTING_DEVICE_EXCEPT_FOR"] = "cuda,cpu"
        common_device_type.onlyCUDA = common_device_type.onlyPRIVATEUSE1
        common_utils.TEST_CUDA = common_utils.TEST_PRIVATEUSE1
    module = types.ModuleType("torch_npu.testing")
    module.__doc__ = "Provided by ascend-compat's oracle: device-generic test setup for the simulated NPU."
    sys.modules["torch_npu.testing"] = module
    torch_npu.testing = module


class Collector:
    """pytest plugin: one outcome per test id; a failure in any phase (setup/call/teardown) wins."""

    def __init__(self):
        self.outcomes: dict = {}
        self.messages: dict = {}

    def pytest_runtest_logreport(self, report):
        nodeid, outcome = report.nodeid, report.outcome
        if self.outcomes.get(nodeid) == "failed":
            return
        if outcome == "failed" or report.when == "call" or outcome == "skipped":
            self.outcomes[nodeid] = outcome
            if outcome == "failed":
                self.messages[nodeid] = _first_error_line(report)
            elif outcome == "skipped" and isinstance(report.longrepr, tuple):
                self.messages[nodeid] = str(report.longrepr[2])[:300]


def _first_error_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0][:300] if crash.message else ""
    return str(report.longrepr).strip().splitlines()[-1][:300]


def main(argv) -> int:
    device = "privateuse1"
    if argv and argv[0].startswith("--device="):
        device = argv.pop(0).split("=", 1)[1]
    test_file, results, *pytest_args = argv
    from ascend_compat import simulator

    simulator.install()
    provide_torch_npu_testing(device)
    import pytest

    collector = Collector()
    chosen = [a for a in pytest_args if a.startswith(f"{test_file}::")]  # test ids: only those run
    targets = [] if chosen else [test_file]
    code = pytest.main([*targets, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *pytest_args],
                       plugins=[collector])
    from ascend_compat._files import write_text_atomic

    write_text_atomic(results, json.dumps({"exit_code": int(code), "outcomes": collector.outcomes,
                                           "messages": collector.messages}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
