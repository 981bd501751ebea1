"""ascend_compat.doctor exports lazily and imports nothing heavy."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import ascend_compat.doctor as doctor


def test_lazy_exports_resolve():
    assert doctor.explain("107002").symbols == ["ACL_ERROR_RT_CONTEXT_NULL"]
    assert doctor.run_doctor and doctor.Check and doctor.Status.FAIL.value == "FAIL"
    with pytest.raises(AttributeError):
        doctor.no_such_name  # noqa: B018


@pytest.mark.parametrize("name,module", [
    ("FallbackMonitor", "ascend_compat.coverage.fallback"),
    ("audit_model", "ascend_compat.coverage.audit"),
    ("explain", "ascend_compat.errors.explain"),
    ("scan_text", "ascend_compat.errors.logscan"),
])
def test_promised_names_are_reexported(name, module):
    """The public paths users were given (``ascend_compat.doctor.FallbackMonitor`` ...) stay valid."""
    assert getattr(doctor, name) is getattr(importlib.import_module(module), name)


def test_import_is_light():
    code = ("import sys, ascend_compat.doctor as d; d.explain('EZ9999'); d.scan_text('error code is 1');"
            "from ascend_compat.doctor.checks import run_doctor;"
            "heavy = [m for m in ('torch', 'torch_npu', 'numpy', 'libcst', 'ascend_compat.simulator') if m in sys.modules];"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"
