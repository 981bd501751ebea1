"""Version arithmetic for torch, torch_npu and CANN, and the compatibility facts the doctor needs.

Versions are read and ordered by ``ascend_compat._versions`` (``key`` for torch / torch_npu,
``cann_key`` for CANN, driver and firmware). ``base_version`` strips ``.postN`` / ``+local`` tags.
``matrix_rows`` normalises the rows of ``ascend_compat.data.version_matrix()`` (torch_npu, torch,
CANN) whatever their exact key spelling. ``PYTHON_BY_TORCH`` lists supported Python versions per
torch release (PyTorch's published release compatibility table, as summarised in our reference notes).
"""
from __future__ import annotations

from typing import Callable, Optional

from ascend_compat import _versions

#: torch (major, minor) -> (lowest, highest) supported Python (major, minor)
PYTHON_BY_TORCH: dict[tuple[int, int], tuple[tuple[int, int], tuple[int, int]]] = {
    (1, 11): ((3, 7), (3, 10)),
    (2, 1): ((3, 8), (3, 11)), (2, 2): ((3, 8), (3, 10)),
    (2, 3): ((3, 8), (3, 11)), (2, 4): ((3, 8), (3, 11)),
    (2, 5): ((3, 9), (3, 11)), (2, 6): ((3, 9), (3, 11)),
    (2, 7): ((3, 9), (3, 13)), (2, 8): ((3, 9), (3, 13)),
    (2, 9): ((3, 10), (3, 13)), (2, 10): ((3, 10), (3, 13)),
    (2, 11): ((3, 10), (3, 14)), (2, 12): ((3, 10), (3, 14)), (2, 13): ((3, 10), (3, 14)),
}


def base_version(v: str) -> str:
    """The release part of an installed torch / torch_npu version (``2.5.1.post1`` -> ``2.5.1``); an
    unreadable version found on the machine is returned as found (the doctor reports, never crashes)."""
    try:
        return _versions.base(v)
    except _versions.VersionError:
        return v.strip()


def release_line(v: str) -> Optional[tuple[int, int]]:
    """(major, minor) of an installed version, or None when the version found is unreadable."""
    try:
        return _versions.minor(v)
    except _versions.VersionError:
        return None


def python_range(torch_version: str):
    """(lowest, highest) Python (major, minor) for this torch, or None when unknown.

    Uses ``ascend_compat.data.python_support`` (the generated version data) when it is available,
    else the ``PYTHON_BY_TORCH`` summary above.
    """
    try:
        from ascend_compat.data import python_support

        found = python_support(torch_version)
    except Exception:  # data table not generated / not installed: use our summary
        found = None
    if found:
        pys = sorted(_versions.minor(v) for v in found)
        return pys[0], pys[-1]
    line = release_line(torch_version)
    return PYTHON_BY_TORCH.get(line) if line else None


def _pick(row: dict, *names: str) -> Optional[str]:
    lowered = {str(k).lower().replace("-", "_"): v for k, v in row.items()}
    for n in names:
        v = lowered.get(n)
        if v not in (None, ""):
            return str(v)
    return None


def matrix_rows(loader: Optional[Callable[[], list]] = None) -> tuple[list[dict], str]:
    """Normalised ``{"torch_npu", "torch", "cann"}`` rows and a note ("" or why the matrix is missing)."""
    if loader is None:
        from ascend_compat.data import version_matrix as loader  # type: ignore[no-redef]
    try:
        raw = loader()
    except Exception as exc:  # a missing or broken data file must not break the doctor
        return [], f"version matrix could not be loaded: {exc}"
    rows = []
    for r in raw or []:
        if not isinstance(r, dict):
            continue
        npu = _pick(r, "torch_npu", "torch_npu_version", "npu")
        torch = _pick(r, "torch", "pytorch", "torch_version")
        cann = _pick(r, "cann", "cann_version")
        if npu and torch:
            rows.append({"torch_npu": npu, "torch": torch, "cann": cann, "raw": r})
    return rows, ""
