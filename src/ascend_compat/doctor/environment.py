"""What ``ascend-compat doctor`` inspects, made injectable: filesystem root, commands, env vars, Python.

:class:`Environment` bundles everything a check may read. The defaults describe the running
machine; tests pass a fixture tree as ``root``, their own ``env`` mapping and ``sys_path`` (where
Python distributions are looked up), so real install layouts drive the checks without hardware.
Every check returns :class:`Check` objects with a :class:`Status`.
"""
from __future__ import annotations

import enum
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence


class Status(str, enum.Enum):
    """Outcome of one check. FAIL makes ``ascend-compat doctor`` exit 1."""

    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"
    INFO = "INFO"


@dataclass
class Check:
    """One finding: ``name`` (stable id such as ``"cann"``), status, what was found, how to fix it.

    ``fix`` is printed as one sentence ending with a full stop, like check's suggestions: the checks
    compose it from phrases, and the full stop is added here.
    """

    name: str
    status: Status
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        self.fix = self.fix.strip()
        if self.fix and not self.fix.endswith("."):
            self.fix += "."

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status.value, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str = ""


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of trying ``import <module>`` in a child interpreter."""

    ok: bool
    message: str  # the module's version on success, the last error line otherwise


Runner = Callable[[Sequence[str], Mapping[str, str], float], Optional[CommandResult]]
ImportProbe = Callable[[str, "Environment"], ProbeResult]


def run_command(cmd: Sequence[str], env: Mapping[str, str], timeout: float = 20.0) -> CommandResult | None:
    """Run ``cmd`` found on ``env["PATH"]``; None if the executable does not exist."""
    exe = shutil.which(cmd[0], path=env.get("PATH", os.defpath))
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=timeout,
                              env=dict(env), errors="replace")
    except subprocess.TimeoutExpired:
        return CommandResult(-1, "", f"timed out after {timeout:g} s")
    except OSError as exc:
        return CommandResult(-1, "", str(exc))
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)


def probe_import(module: str, environment: "Environment", timeout: float = 120.0) -> ProbeResult:
    """Try ``import module`` in a fresh interpreter (importing real torch_npu without CANN can abort)."""
    env = dict(environment.env)
    if environment.sys_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in environment.sys_path)
    code = f"import {module} as m; print(getattr(m, '__version__', 'unknown'))"
    try:
        proc = subprocess.run([environment.python, "-c", code], capture_output=True, text=True,
                              timeout=timeout, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return ProbeResult(False, f"import {module} did not finish within {timeout:g} s")
    except OSError as exc:
        return ProbeResult(False, f"could not start {environment.python}: {exc}")
    if proc.returncode == 0:
        return ProbeResult(True, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "unknown")
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit status {proc.returncode}"
    if proc.returncode < 0:
        last = f"the interpreter was killed by signal {-proc.returncode} ({last})"
    return ProbeResult(False, last)


@dataclass
class Environment:
    """Everything the doctor reads. Paths in env vars are resolved under ``root`` via :meth:`path`."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    run: Runner = run_command
    python_version: tuple[int, int, int] = tuple(sys.version_info[:3])  # type: ignore[assignment]
    python: str = sys.executable
    sys_path: Optional[Sequence[str]] = None  # None: this interpreter's sys.path
    import_probe: Optional[ImportProbe] = probe_import  # None: never import torch_npu
    simulate: bool = False
    #: also inspect this very process (an in-process simulator); False for a description of another machine
    inspect_process: bool = True
    version_matrix: Optional[Callable[[], list]] = None  # None: ascend_compat.data.version_matrix

    def path(self, p: str | os.PathLike) -> Path:
        """``p`` (an absolute path on the inspected machine) inside ``root``."""
        p = Path(p)
        if self.root == Path("/"):
            return p
        return self.root / (p.relative_to(p.anchor) if p.is_absolute() else p)

    def get(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if value is None else value.strip()
