"""``[tool.ascend-compat]`` in ``pyproject.toml``: defaults for ``check`` (and ``migrate``'s excludes).

The file is the nearest ``pyproject.toml`` holding a ``[tool.ascend-compat]`` table, searched from
the first checked path (its directory for a file) up to the filesystem root. Keys (all optional)::

    [tool.ascend-compat]
    exclude = ["third_party/", "*_pb2.py"]    # gitignore-style, added to --exclude
    select = ["cuda-method", "float64"]       # report only these rule ids
    ignore = ["jit-script"]                    # never report these rule ids
    torch-npu-version = "2.5"                  # target torch_npu version
    fail-on = "moderate"                       # hard | moderate | any

Command-line options win over the file; ``--exclude`` patterns are added to the file's. An
unknown key, a value of the wrong type or an unknown rule id is a usage error naming the file.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional

from ascend_compat.cli._common import USAGE, CliError

KEYS = ("exclude", "select", "ignore", "torch-npu-version", "fail-on")
FAIL_LEVELS = ("hard", "moderate", "any")


@dataclass
class ProjectConfig:
    path: Optional[str] = None
    exclude: List[str] = field(default_factory=list)
    select: Optional[List[str]] = None
    ignore: List[str] = field(default_factory=list)
    torch_npu_version: Optional[str] = None
    fail_on: Optional[str] = None


#: a pyproject.toml larger than this is no configuration file (it is not read further)
MAX_CONFIG_BYTES = 4 << 20


def _read_head(path: str) -> bytes:
    """Up to MAX_CONFIG_BYTES + 1 bytes of ``path`` (OSError propagates)."""
    with open(path, "rb") as fh:
        return fh.read(MAX_CONFIG_BYTES + 1)


def _load_toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        data = _read_head(path)
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", USAGE) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise CliError(f"{path} is over {MAX_CONFIG_BYTES >> 20} MB: not a configuration file; "
                       "pass --no-config to ignore it", USAGE)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{path} is not valid TOML: {exc}", USAGE) from None
    except RecursionError:
        raise CliError(f"{path} is nested too deeply to read as TOML; pass --no-config to ignore it", USAGE) from None


def find(start: str) -> Optional[str]:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.ascend-compat]`` table."""
    here = os.path.abspath(start)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                has_table = b"ascend-compat" in _read_head(candidate)
            except OSError:
                has_table = False
            if has_table and "ascend-compat" in _load_toml(candidate).get("tool", {}):
                return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _strings(path: str, key: str, value) -> List[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CliError(f"{path}: [tool.ascend-compat] {key} must be a list of strings", USAGE)
    return list(value)


def load(path: str) -> ProjectConfig:
    """Read and validate ``[tool.ascend-compat]`` of ``path``."""
    table = _load_toml(path).get("tool", {}).get("ascend-compat", {})
    if not isinstance(table, dict):
        raise CliError(f"{path}: [tool.ascend-compat] must be a table", USAGE)
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise CliError(f"{path}: unknown key(s) in [tool.ascend-compat]: {', '.join(unknown)} "
                       f"(known: {', '.join(KEYS)})", USAGE)
    cfg = ProjectConfig(path=path)
    if "exclude" in table:
        cfg.exclude = _strings(path, "exclude", table["exclude"])
    if "select" in table:
        cfg.select = _strings(path, "select", table["select"])
    if "ignore" in table:
        cfg.ignore = _strings(path, "ignore", table["ignore"])
    if "torch-npu-version" in table:
        value = table["torch-npu-version"]
        if not isinstance(value, str):
            raise CliError(f"{path}: [tool.ascend-compat] torch-npu-version must be a string like \"2.5\"", USAGE)
        cfg.torch_npu_version = value
    if "fail-on" in table:
        if table["fail-on"] not in FAIL_LEVELS:
            raise CliError(f"{path}: [tool.ascend-compat] fail-on must be one of {', '.join(FAIL_LEVELS)}", USAGE)
        cfg.fail_on = table["fail-on"]
    return cfg
