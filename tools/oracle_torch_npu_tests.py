"""Judge the simulated NPU by torch_npu's own test suite.

torch_npu's repository (Ascend/pytorch) keeps adapted copies of PyTorch's device-generic tests under
``test/`` and the list of tests disabled on real NPUs in
``test/unsupported_test_cases/.pytorch-disabled-tests.json``. This script runs chosen test files on
the simulator (one fresh interpreter per file, see ``oracle_worker.py``) and cross-tabulates each
test's outcome (passed/failed/skipped) with whether real NPUs run it (enabled) or not (disabled)::

    python tools/oracle_torch_npu_tests.py --checkout CHECKOUT --out summary.json \\
        test_view_ops.py test_indexing.py test_sort_and_select.py

CHECKOUT is a directory holding torch_npu's ``test/`` tree (e.g. ``git --git-dir=... archive HEAD test
| tar x -C CHECKOUT``); nothing is written into it. The interesting cells are ``enabled/failed``
(the simulator fails where hardware passes) and ``disabled/passed`` (hardware cannot run it, the
simulator can: a real hardware limit the simulator may need to reproduce). Needs ``expecttest``
(``pip install expecttest``), which PyTorch's test utilities import.

``--cpu-control`` runs the ``enabled/failed`` tests once more on the host CPU (same torch, same
test file, device-generic classes instantiated for ``cpu`` instead of ``privateuse1``): a test that
fails there too fails because of the installed torch (a behaviour change the adapted copy predates),
not because of the simulator, and real torch_npu, which runs the same composite kernels on that
torch, fails it as well. Those are reported apart (``enabled_failed_cpu_too``).

The disabled list is chosen as torch_npu's own ``test/get_failed_ut_from_log.py`` chooses it:
``.pytorch-disabled-tests-<torch major.minor>.json`` when the checkout has one for the installed
torch, else ``.pytorch-disabled-tests.json``.

Disabled-list semantics follow torch_npu's ``torch_npu.testing._check_if_enable_npu``: an entry
``"test_x_npu_float32 (__main__.TestFooPRIVATEUSE1)"`` disables a test when its class name starts
with the entry's class (PRIVATEUSE1 and NPU interchangeable) and the entry's test name equals the
test's method name or that name without its device and dtype suffixes. Entries whose second field
names only another chip generation ("910A" on A2 chips, "A2" on 910A) do not apply.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

HERE = Path(__file__).resolve().parent
DISABLED_JSON = Path("test") / "unsupported_test_cases" / ".pytorch-disabled-tests.json"
DEVICE_SUFFIXES = ("npu", "privateuse1")
DTYPE_SUFFIXES = frozenset(
    "bool uint8 uint16 uint32 uint64 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex32 "
    "complex64 complex128 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz".split())
OUTCOMES = ("passed", "failed", "skipped")
_ENTRY = re.compile(r"^(\S+) \((?:[\w.]*\.)?(\w+)\)$")


def sanitize(test_name: str) -> str:
    """``test_x_npu_float32`` -> ``test_x`` (PyTorch's ``remove_device_and_dtype_suffixes``)."""
    chunks = test_name.split("_")
    if len(chunks) > 1 and chunks[-1] in DTYPE_SUFFIXES:
        chunks = chunks[:-1]
        if len(chunks) > 1 and chunks[-1] in DEVICE_SUFFIXES:
            chunks = chunks[:-1]
    return "_".join(chunks)


def disabled_index(data: Dict[str, list], chip: str = "A2") -> Dict[str, set]:
    """Map test name -> set of class names disabled for it, for the given chip generation."""
    other = "910A" if chip == "A2" else "A2"
    index: Dict[str, set] = collections.defaultdict(set)
    for key, value in data.items():
        if not isinstance(value, list) or len(value) < 2:
            continue
        if value[1] and other in value[1]:
            continue
        m = _ENTRY.match(key.strip())
        if m:
            index[m.group(1)].add(m.group(2))
    return index


def is_disabled(index: Dict[str, set], class_name: str, test_name: str) -> bool:
    """torch_npu's matching rule (see the module docstring)."""
    for name in {test_name, sanitize(test_name)}:
        for target in index.get(name, ()):
            alt = target.replace("PRIVATEUSE1", "NPU") if "PRIVATEUSE1" in target else target.replace(
                "NPU", "PRIVATEUSE1")
            if class_name.startswith(target) or class_name.startswith(alt):
                return True
    return False


def split_nodeid(nodeid: str) -> Tuple[str, str]:
    """``file.py::TestFooPRIVATEUSE1::test_x_npu`` -> (``TestFooPRIVATEUSE1``, ``test_x_npu``)."""
    parts = nodeid.split("::")
    return (parts[-2] if len(parts) >= 3 else ""), parts[-1]


def crosstab(outcomes: Dict[str, str], index: Dict[str, set]) -> dict:
    """Counts per (enabled|disabled, outcome) and the test ids of the two interesting cells."""
    counts = {side: dict.fromkeys(OUTCOMES, 0) for side in ("enabled", "disabled")}
    enabled_failed: List[str] = []
    disabled_passed: List[str] = []
    for nodeid, outcome in sorted(outcomes.items()):
        cls, name = split_nodeid(nodeid)
        side = "disabled" if is_disabled(index, cls, name) else "enabled"
        counts[side][outcome] += 1
        if side == "enabled" and outcome == "failed":
            enabled_failed.append(nodeid)
        elif side == "disabled" and outcome == "passed":
            disabled_passed.append(nodeid)
    return {"counts": counts, "enabled_failed": enabled_failed, "disabled_passed": disabled_passed}


def cpu_nodeid(nodeid: str) -> str:
    """The CPU twin of a device-generic test id: ``f.py::TestFooPRIVATEUSE1::test_x_npu_float32`` ->
    ``f.py::TestFooCPU::test_x_cpu_float32`` (class suffix PRIVATEUSE1 or NPU, test device suffix
    ``npu``, which PyTorch puts before the dtype suffix)."""
    head, cls, name = nodeid.rsplit("::", 2)
    for suffix in ("PRIVATEUSE1", "NPU"):
        if cls.endswith(suffix):
            cls = cls[: -len(suffix)] + "CPU"
            break
    chunks = name.split("_")
    for i in range(len(chunks) - 1, 0, -1):
        if chunks[i] in DEVICE_SUFFIXES:
            chunks[i] = "cpu"
            break
    return f"{head}::{cls}::{'_'.join(chunks)}"


def default_disabled_list(checkout: Path, torch_version: str) -> Path:
    """torch_npu's choice of disabled list for a torch version (see the module docstring)."""
    major_minor = ".".join(torch_version.split("+")[0].split(".")[:2])
    versioned = checkout / DISABLED_JSON.with_name(f".pytorch-disabled-tests-{major_minor}.json")
    return versioned if versioned.is_file() else checkout / DISABLED_JSON


def format_table(name: str, counts: dict) -> str:
    rows = [f"{name}", f"  {'':10}{'passed':>8}{'failed':>8}{'skipped':>8}"]
    for side in ("enabled", "disabled"):
        c = counts[side]
        rows.append(f"  {side:10}{c['passed']:>8}{c['failed']:>8}{c['skipped']:>8}")
    return "\n".join(rows)


def run_file(test_dir: Path, test_file: str, timeout: float, pytest_args: Iterable[str],
             device: str = "privateuse1") -> dict:
    """Run one test file in a fresh interpreter with the simulator installed, its device-generic
    tests instantiated for ``device`` (``privateuse1``: the simulated NPU; ``cpu``: the control);
    its outcomes and messages."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_COMPAT_", "TORCH_NPU_"))}
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = device
    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        results = Path(tmp) / "results.json"
        cmd = [sys.executable, str(HERE / "oracle_worker.py"), f"--device={device}", test_file, str(results),
               *pytest_args]
        try:
            proc = subprocess.run(cmd, cwd=test_dir, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{test_file}: no result within {timeout:.0f} s (raise --timeout)") from None
        if not results.exists():
            raise SystemExit(f"{test_file}: the worker wrote no results (exit {proc.returncode}):\n"
                             + (proc.stderr or proc.stdout)[-3000:])
        return json.loads(results.read_text())


def _installed_torch_version() -> str:
    """The torch the workers run (read from its metadata: the driver itself never imports torch)."""
    from importlib.metadata import version

    return version("torch")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="test files relative to CHECKOUT/test (e.g. test_view_ops.py)")
    parser.add_argument("--checkout", required=True, type=Path, help="directory holding torch_npu's test/ tree")
    parser.add_argument("--disabled", type=Path, help="disabled-tests JSON (default: torch_npu's choice for the "
                        f"installed torch, CHECKOUT/{DISABLED_JSON} or its -<major.minor> twin)")
    parser.add_argument("--chip", choices=("A2", "910A"), default="A2",
                        help="chip generation whose disabled entries apply (default A2, the simulated 910B)")
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per test file (default 1800)")
    parser.add_argument("--pytest-arg", action="append", default=[], help="extra pytest argument (repeatable)")
    parser.add_argument("--cpu-control", action="store_true",
                        help="re-run the enabled tests that fail on the simulator on the host CPU")
    args = parser.parse_args(argv)

    test_dir = args.checkout / "test"
    disabled_path = args.disabled or default_disabled_list(args.checkout, _installed_torch_version())
    for path in [test_dir / f for f in args.files] + [disabled_path]:
        if not path.is_file():
            parser.error(f"not found: {path}")
    index = disabled_index(json.loads(disabled_path.read_text()), args.chip)

    summary: dict = {"disabled_list": str(disabled_path.name), "chip": args.chip, "torch": _installed_torch_version(),
                     "files": {}}
    total = {side: dict.fromkeys(OUTCOMES, 0) for side in ("enabled", "disabled")}
    for test_file in args.files:
        result = run_file(test_dir, test_file, args.timeout, args.pytest_arg)
        table = crosstab(result["outcomes"], index)
        messages = result["messages"]
        table["messages"] = {n: messages.get(n, "") for n, o in sorted(result["outcomes"].items())
                             if o != "passed" or n in table["disabled_passed"]}
        table["pytest_exit_code"] = result["exit_code"]
        table["outcomes"] = {n: ("disabled/" if is_disabled(index, *split_nodeid(n)) else "enabled/") + o
                             for n, o in sorted(result["outcomes"].items())}
        summary["files"][test_file] = table
        for side in total:
            for outcome in OUTCOMES:
                total[side][outcome] += table["counts"][side][outcome]
        if args.cpu_control and table["enabled_failed"]:
            twins = {n: cpu_nodeid(n) for n in table["enabled_failed"]}
            control = run_file(test_dir, test_file, args.timeout, [*args.pytest_arg, *twins.values()], device="cpu")
            table["cpu_control"] = {n: control["outcomes"].get(twin, "not collected") for n, twin in twins.items()}
            table["enabled_failed_cpu_too"] = [n for n, o in table["cpu_control"].items() if o == "failed"]
        print(format_table(test_file, table["counts"]))
        for nodeid in table["enabled_failed"]:
            where = ("the simulator and the CPU" if nodeid in table.get("enabled_failed_cpu_too", ())
                     else "the simulator")
            print(f"    enabled, fails on {where}: {split_nodeid(nodeid)[1]}: {messages.get(nodeid, '')[:160]}")
    summary["total"] = total
    print(format_table("total", total))
    if args.out:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(args.out, json.dumps(summary, indent=1, sort_keys=True) + "\n")
        print(f"summary written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
