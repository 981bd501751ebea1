"""``migrate``: rewrite CUDA PyTorch code for Ascend (libcst, optional dependency ``ascend-compat[migrate]``).

:func:`migrate_source` rewrites one source string; :func:`ascend_compat.analysis.migrate.apply.migrate_paths`
handles files, trees, notebooks, dry runs, in-place and copy-tree writes.
"""
from __future__ import annotations

from ascend_compat.analysis.migrate.transform import Change, MigrateError, SourceResult, migrate_source

__all__ = ["Change", "MigrateError", "SourceResult", "migrate_source"]
