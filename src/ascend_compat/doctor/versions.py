"""Version arithmetic for torch, torch_npu and CANN, and the compatibility facts the doctor needs.

``version_key`` orders CANN-style versions (``8.0.RC2 < 8.0.0 < 8.3.RC1 < 9.1.0``, alpha/beta/Tn
before RCn before the release). ``base_version`` strips ``.postN`` / ``+local`` tags.
``matrix_rows`` normalises the rows of ``ascend_compat.data.version_matrix()`` (torch_npu, torch,
CANN) whatever their exact key spelling. ``PYTHON_BY_TORCH`` lists supported Python versions per
torch release (PyTorch's published release compatibility table, as summarised in our reference notes).
"""
from __future__ import annotations

import re
from typing import Callable, Optional

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

_PRE = {"alpha": -4000, "a": -4000, "beta": -3000, "b": -3000, "t": -2000, "rc": -1000}


def version_key(v: str) -> tuple:
    """A sortable key for torch/torch_npu/CANN/driver versions; unparsable parts sort first."""
    v = v.strip().lower().lstrip("v")
    v = re.split(r"[+]", v)[0]
    key: list[int] = []
    for part in re.split(r"[.\-_]", v):
        if not part:
            continue
        if part.isdigit():
            key.append(int(part))
            continue
        m = re.fullmatch(r"(\d*)(alpha|beta|rc|post|a|b|t)(\d*)", part)
        if not m:
            key.append(-9000)
            continue
        lead, tag, num = m.group(1), m.group(2), int(m.group(3) or 0)
        if lead:
            key.append(int(lead))
        if tag == "post":
            key.extend([0] * max(0, 3 - len(key)))
            key.append(10000 + num)
        elif lead:
            key.append(_PRE[tag] + num)
        else:  # 8.0.RC2: the RC replaces the patch number
            key.append(_PRE[tag] + num)
    # pad so that "8.5.0" == "8.5.0.0" and pre-release parts (negative) sort below the release
    key.extend([0] * max(0, 6 - len(key)))
    return tuple(key)


def base_version(v: str) -> str:
    """``2.5.1.post1`` / ``2.5.1+cpu`` / ``2.1.0rc1`` -> ``2.5.1`` / ``2.5.1`` / ``2.1.0``."""
    m = re.match(r"^(\d+(?:\.\d+){0,2})", v.strip())
    return m.group(1) if m else v.strip()


def major_minor(v: str) -> tuple[int, int] | None:
    m = re.match(r"^(\d+)\.(\d+)", v.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


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
        pys = sorted(tuple(int(x) for x in v.split(".")[:2]) for v in found)
        return pys[0], pys[-1]
    mm = major_minor(torch_version)
    return PYTHON_BY_TORCH.get(mm) if mm else None


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
