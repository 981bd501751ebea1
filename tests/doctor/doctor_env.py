"""Fixture install trees for the doctor tests (helpers imported by the test modules) and a helper building an Environment over one of them.

Each directory under ``fixtures/`` is the root filesystem of a machine: ``usr/local/Ascend/...``
(CANN toolkit, driver, firmware), ``dev/davinci*``, ``etc/ascend_install.info``, a
``site-packages`` with torch / torch_npu metadata, and ``bin/npu-smi`` (a script printing a
recorded ``npu-smi info`` table from ``fixtures/npu_smi/``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ascend_compat.doctor.environment import Environment

FIXTURES = Path(__file__).parent / "fixtures"

#: published rows (Ascend/pytorch compatibility table) used where a test needs a known matrix
MATRIX = [
    {"torch_npu": "2.8.0.post2", "torch": "2.8.0", "cann": "8.5.0"},
    {"torch_npu": "2.7.1.post2", "torch": "2.7.1", "cann": "8.5.0"},
    {"torch_npu": "2.8.0", "torch": "2.8.0", "cann": "8.3.RC1"},
    {"torch_npu": "2.7.1", "torch": "2.7.1", "cann": "8.3.RC1"},
    {"torch_npu": "2.6.0", "torch": "2.6.0", "cann": "8.2.RC1"},
    {"torch_npu": "2.5.1", "torch": "2.5.1", "cann": "8.1.RC1"},
    {"torch_npu": "2.4.0.post2", "torch": "2.4.0", "cann": "8.0.0"},
    {"torch_npu": "2.3.1", "torch": "2.3.1", "cann": "8.0.RC2"},
]


def make_env(name: str | None, env: dict | None = None, *, with_bin: bool = True, **kw) -> Environment:
    """An Environment rooted at fixtures/<name> (or an empty tmp-like root when name is None)."""
    root = FIXTURES / name if name else FIXTURES / "empty_root"
    root.mkdir(exist_ok=True)
    path = [str(root / "bin")] if with_bin and (root / "bin").is_dir() else []
    base = {"PATH": os.pathsep.join(path + ["/usr/bin", "/bin"]), "HOME": "/home/user"}
    base.update(env or {})
    kw.setdefault("sys_path", [str(root / "site-packages")])
    kw.setdefault("import_probe", None)
    kw.setdefault("version_matrix", lambda: [dict(r) for r in MATRIX])
    kw.setdefault("python_version", (3, 10, 14))
    kw.setdefault("inspect_process", False)  # a fixture machine, not this test process
    return Environment(root=root, env=base, python=sys.executable, **kw)


def by_name(checks, name):
    found = [c for c in checks if c.name == name]
    assert found, f"no check named {name!r} in {[c.name for c in checks]}"
    return found

