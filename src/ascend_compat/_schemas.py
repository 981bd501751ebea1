"""The one naming form of every machine-readable report ascend-compat writes.

Each JSON document starts with ``"schema": "ascend-compat/<name>"`` and ``"schema_version": "MAJOR.MINOR"``
(a string): a new field bumps the minor version; renaming, removing or changing the meaning of a field
bumps the major version. :data:`VERSIONS` is the list of schemas and their current versions; a writer
takes its header from :func:`header` (``docs/cli.md`` names them for users).
"""
from __future__ import annotations

#: schema name (``ascend-compat/<name>``) -> current version
VERSIONS = {
    "check": "1.1",            # 1.1: summary.files_skipped (paths that hold no code)
    "doctor": "1.1",           # 1.1: host and versions (doctor --cluster --node-report reads them)
    "error": "1.1",            # 1.1: job (error --log DIR: root_cause, consequences, timeline)
    "audit": "1.0",
    "profile": "2.0",          # was "ascend-compat.profile", version 1 (an int); 2: findings carry their phase; phases, ops_by_phase, no_npu_op
    "compare": "2.0",          # was "ascend-compat.compare", version 1, then 2 (ints); 2: the accuracy standard
    "migrate-changes": "1.0",  # migrate --changes FILE.json
    "plan": "1.0",             # plan --format json (had no header)
    "run-record": "1.0",       # compare --record FILE (was "ascend-compat.run-record", version 1: an int)
}


def schema_id(name: str) -> str:
    """``"ascend-compat/<name>"`` for a schema listed in :data:`VERSIONS` (KeyError otherwise)."""
    VERSIONS[name]
    return f"ascend-compat/{name}"


def header(name: str) -> dict:
    """``{"schema": "ascend-compat/<name>", "schema_version": "MAJOR.MINOR"}``."""
    return {"schema": schema_id(name), "schema_version": VERSIONS[name]}


def readable(name: str, version: object) -> bool:
    """Whether a document of schema ``name`` at ``version`` can be read by this version: the same major
    version (a minor version only adds fields, which readers ignore)."""
    return isinstance(version, str) and version.split(".")[0] == VERSIONS[name].split(".")[0]
