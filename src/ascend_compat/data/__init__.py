"""Generated knowledge tables about torch_npu, and their loaders.

Every table is a JSON file in this package, written by a script in ``tools/`` (named in its
``_generated_by`` field) from public sources (named in its ``_source`` field); none is hand-written.
Loaders are cached, read with :mod:`importlib.resources`, and import nothing heavy.

Versions. Tables are keyed by torch_npu *minor* version (``"2.5"``); :func:`resolve_version` maps any
torch_npu or torch version string to a key:

* ``"2.5.1"``, ``"2.5.1.post1"``, ``"2.5.1+cpu"``, ``"2.13.0a0+git1234"`` -> ``"2.5"`` / ``"2.13"``
  (torch_npu X.Y pairs with torch X.Y, so torch versions map the same way);
* ``None`` -> the newest key;
* a version newer than the newest key -> the newest key (the best available estimate: coverage
  only grows slowly between releases, and anything the newer release added is then reported as a
  fallback, the cautious side);
* a version between two keys that has no table of its own -> the nearest older key;
* a version older than the oldest key -> :class:`ValueError` saying which versions exist;
* anything that does not start with ``<major>.<minor>`` -> :class:`ValueError`.

Op coverage (``npu_native_ops.json``, from torch_npu wheels' ``npu_native_functions_by_codegen.yaml``):
:func:`native_ops` answers "does torch_npu register its own kernel for this aten overload". The rule,
taken from torch_npu's codegen (``torchnpugen/gen_backend_stubs.py``): each overload listed is
registered on its own (``add.Tensor`` says nothing about ``add.out`` or ``add_.Tensor``; those are
listed separately when they exist); entries of the ``autograd`` section (kernels at
AutogradPrivateUse1, e.g. ``_thnn_fused_gru_cell``) count as native; sparse-only and quantized
kernels do not. An overload *absent* from the set does not necessarily fall back to the CPU: ops with
a CompositeImplicitAutograd, CompositeExplicitAutograd or CompositeExplicitAutogradNonFunctional
kernel in torch run that kernel instead (e.g. ``gelu`` from 2.7 on: torch_npu registers only
``gelu.out`` and torch's structured ``gelu`` kernel calls it); only what reaches the PrivateUse1
dispatch key without a kernel falls back. :func:`would_fall_back` applies that rule with the
installed torch's dispatcher. The tables cover torch_npu 2.1 to 2.14 (2.2 reconstructed from
op-plugin; every other version read from its newest PyPI wheel).

Custom op schemas (``npu_op_schemas.json``, from one torch_npu wheel's codegen yaml): :func:`npu_op_schemas`.

msprobe's accuracy standard (``accuracy_standard.json``, from Ascend/mstt): :func:`accuracy_standard`.

Other tables: :func:`npu_api` / :func:`custom_api` (public names of ``torch_npu.npu`` / ``torch_npu``),
:func:`cuda_api_map` (``torch.cuda`` -> ``torch.npu`` per version), :func:`version_matrix`,
:func:`python_support`, :func:`recommended` (torch_npu / torch / CANN / Python pairings).

Op names: overloads as ``"add.Tensor"``, the default overload as the bare name ``"relu"``;
:func:`normalize_op_name` turns ``"aten::relu"``, ``"aten.relu.default"``, ``"relu.default"`` into it.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from ascend_compat import _versions

__all__ = [
    "DataError",
    "load_table",
    "normalize_op_name",
    "resolve_version",
    "native_op_versions",
    "native_ops",
    "is_native",
    "quantized_ops",
    "would_fall_back",
    "composite_kernel",
    "custom_ops",
    "custom_op_overloads",
    "exposed_custom_ops",
    "npu_op_schemas",
    "accuracy_standard",
    "npu_api_versions",
    "npu_api",
    "custom_api",
    "cuda_api_versions",
    "cuda_api_map",
    "version_matrix",
    "python_support",
    "recommended",
    "recommended_combination",
    "torch_c_cuda",
]


class DataError(RuntimeError):
    """A packaged data table is missing or malformed (a broken installation or a generator bug)."""


@functools.lru_cache(maxsize=None)
def load_table(name: str) -> Dict[str, Any]:
    """The parsed JSON table ``name`` (e.g. ``"npu_native_ops.json"``) shipped in this package.

    Raises :class:`DataError` if it is missing or lacks its ``_source``/``_generated_by`` header.
    The returned dict is shared: do not modify it.
    """
    from importlib import resources

    try:
        text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise DataError(
            f"data table {name!r} is missing from the ascend_compat package ({exc}); "
            "reinstall ascend-compat, or regenerate it with the script in tools/ (see tools/README.md)"
        ) from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DataError(f"data table {name!r} is not valid JSON: {exc}") from None
    for field in ("_source", "_generated_by"):
        if field not in data:
            raise DataError(f"data table {name!r} has no {field!r} header")
    return data


# ---------------------------------------------------------------- versions

def _minor(version: str) -> Tuple[int, int]:
    """(major, minor) of a torch_npu or torch version; tables are keyed by release line."""
    return _versions.minor(version)


def _resolve(version: Optional[str], available: Iterable[str], what: str) -> str:
    keys = sorted(available, key=_minor)
    if not keys:
        raise DataError(f"no versions in the {what} table")
    if version is None:
        return keys[-1]
    want = _minor(version)
    if want > _minor(keys[-1]):
        return keys[-1]
    older = [k for k in keys if _minor(k) <= want]
    if not older:
        raise ValueError(
            f"torch_npu {version} is older than every version with {what} data "
            f"({', '.join(keys)}); ascend-compat supports torch_npu {keys[0]} and newer"
        )
    return older[-1]


def resolve_version(version: Optional[str] = None) -> str:
    """The op-coverage table key for a torch_npu or torch version (rules in the module docstring)."""
    return _resolve(version, native_op_versions(), "operator coverage")


def native_op_versions() -> Tuple[str, ...]:
    """Versions with op-coverage tables, oldest first, e.g. ``("2.1", "2.2", ..., "2.14")``."""
    return tuple(sorted(load_table("npu_native_ops.json")["versions"], key=_minor))


# ---------------------------------------------------------------- op coverage

def normalize_op_name(name: str) -> str:
    """``"aten::add.Tensor"`` / ``"aten.add.Tensor"`` / ``"relu.default"`` -> ``"add.Tensor"`` / ``"relu"``."""
    name = str(name).strip()
    if "::" in name:
        name = name.split("::", 1)[1]
    elif name.startswith("aten."):
        name = name[len("aten."):]
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return name


@functools.lru_cache(maxsize=None)
def _native_ops(key: str) -> FrozenSet[str]:
    return frozenset(load_table("npu_native_ops.json")["versions"][key]["supported"])


def native_ops(torch_npu_version: Optional[str] = None) -> FrozenSet[str]:
    """Aten overloads torch_npu ``torch_npu_version`` (None = newest) implements with its own kernel.

    Names as ``"add.Tensor"``, ``"add_.Tensor"``, ``"add.out"``, ``"relu"`` (default overload bare).
    """
    return _native_ops(resolve_version(torch_npu_version))


def quantized_ops(torch_npu_version: Optional[str] = None) -> FrozenSet[str]:
    """Aten overloads of the "quant" section of torch_npu's op yaml (kernels it registers on
    QuantizedPrivateUse1), e.g. ``"dequantize.self"``, ``"int_repr"``; empty for torch_npu 2.1."""
    key = resolve_version(torch_npu_version)
    return frozenset(load_table("npu_native_ops.json")["versions"][key].get("quant", ()))


def is_native(op: str, torch_npu_version: Optional[str] = None) -> bool:
    """Whether aten overload ``op`` (any form :func:`normalize_op_name` accepts) has a torch_npu kernel."""
    return normalize_op_name(op) in native_ops(torch_npu_version)


#: composite dispatch keys, in the order the dispatcher prefers them for a backend without a kernel
COMPOSITE_KEYS = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)


def composite_kernel(qualified: str) -> Optional[str]:
    """The composite dispatch key whose kernel the installed torch runs for ``qualified``
    (``"aten::gelu"``, ``"aten::add.Tensor"``) on a backend without a kernel of its own, or None
    (the op then reaches the backend's fallback). Imports torch."""
    import torch

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return next((key for key in COMPOSITE_KEYS if has(qualified, key)), None)


def would_fall_back(op: str, torch_npu_version: Optional[str] = None) -> bool:
    """Whether calling aten overload ``op`` on an npu tensor would reach torch_npu's CPU fallback:
    torch_npu has no kernel for it and the *installed* torch has no composite kernel (implicit,
    explicit or explicit-non-functional) that would run instead. Imports torch; raises ValueError
    for an op the installed torch does not know. The installed torch may differ from the one the
    torch_npu version pairs with; the composite check then reflects the installed one."""
    name = normalize_op_name(op)
    if name in native_ops(torch_npu_version):
        return False
    import torch

    qualified = "aten::" + name
    base, _, overload = name.partition(".")
    try:
        torch._C._dispatch_find_schema_or_throw("aten::" + base, overload)
    except RuntimeError:
        raise ValueError(f"torch {torch.__version__} has no operator aten::{name}") from None
    return composite_kernel(qualified) is None


@functools.lru_cache(maxsize=None)
def _custom(key: str, field: str, base: bool) -> FrozenSet[str]:
    names = load_table("npu_native_ops.json")["versions"][key][field]
    return frozenset(n.split(".")[0] for n in names) if base else frozenset(names)


def custom_ops(version: Optional[str] = None) -> FrozenSet[str]:
    """Names of torch_npu's custom ``npu`` ops (``torch.ops.npu.<name>``), e.g. ``npu_fusion_attention``."""
    return _custom(resolve_version(version), "custom", True)


def custom_op_overloads(version: Optional[str] = None) -> FrozenSet[str]:
    """torch_npu's custom ``npu`` ops with overload names, e.g. ``npu_format_cast.Tensor``."""
    return _custom(resolve_version(version), "custom", False)


def exposed_custom_ops(version: Optional[str] = None) -> FrozenSet[str]:
    """Custom ops torch_npu exposes as ``torch_npu.<name>`` (marked ``exposed`` in its op yaml)."""
    return _custom(resolve_version(version), "exposed", False)


def npu_op_schemas() -> Dict[str, Dict[str, Any]]:
    """torch_npu's custom ``npu::`` op overloads (``"npu_format_cast.Tensor"``, default overload bare) ->
    ``{"schema", "exposed", "autograd", "composite"}``, from the torch_npu wheel named in the table's
    ``_source`` (2.14.0). The returned dict is shared: do not modify it."""
    return load_table("npu_op_schemas.json")["ops"]


def accuracy_standard() -> Dict[str, Any]:
    """msprobe's accuracy standard (``accuracy_standard.json``, from Ascend/mstt): the standard each aten op
    is judged by (``ops``, base names; every other op: benchmark comparison), the per-dtype thresholds
    (``dtype``), the benchmark ratio limits, the ULP and thousandth limits. Read by
    ``ascend_compat.accuracy.standard``. The returned dict is shared: do not modify it."""
    return load_table("accuracy_standard.json")


# ---------------------------------------------------------------- torch_npu.npu API

def npu_api_versions() -> Tuple[str, ...]:
    """Versions with ``torch_npu.npu`` API tables, oldest first."""
    return tuple(sorted(load_table("npu_api.json")["versions"], key=_minor))


@functools.lru_cache(maxsize=None)
def _api(key: str, field: str) -> FrozenSet[str]:
    return frozenset(load_table("npu_api.json")["versions"][key][field])


def npu_api(version: Optional[str] = None) -> FrozenSet[str]:
    """Public names of ``torch_npu.npu`` for that torch_npu version: ``__all__`` plus the documented
    names outside it (``get_soc_version``, the sdp switches, submodules ``amp``/``random``/...)."""
    return _api(_resolve(version, npu_api_versions(), "torch_npu.npu API"), "npu")


def custom_api(version: Optional[str] = None) -> FrozenSet[str]:
    """Public names of the top-level ``torch_npu`` module (its ``__all__`` plus the exposed custom ops)."""
    return _api(_resolve(version, npu_api_versions(), "torch_npu.npu API"), "torch_npu")


# ---------------------------------------------------------------- torch.cuda -> torch.npu

def cuda_api_versions() -> Tuple[str, ...]:
    """torch_npu versions the ``torch.cuda`` mapping distinguishes, oldest first."""
    return tuple(sorted(load_table("cuda_api_map.json")["versions"], key=_minor))


def cuda_api_map(torch_npu_version: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
    """Every public ``torch.cuda`` name of torch 2.13/2.14 (``"is_available"``, dotted for submodule
    members: ``"amp.autocast"``, ``"nvtx.range_push"``) -> its NPU status for that torch_npu version:

    * ``status``: ``"mapped"`` (``torch.npu`` has the same name), ``"renamed"`` (``CUDAGraph`` ->
      ``NPUGraph``, ``nvtx`` -> ``mstx``, ...) or ``"unsupported"``;
    * ``npu_name``: the name relative to ``torch.npu`` (``"NPUGraph"``, ``"mstx.range_push"``), or None;
    * ``note``: how it differs, or what to use instead (English), or None;
    * ``torch``: torch versions (of 2.13, 2.14) whose ``torch.cuda`` has the name;
    * when torch_npu's API support pages document it: ``doc`` (which page), ``doc_npu_name``,
      ``doc_note_zh`` (the page's restriction text, Chinese, verbatim) and ``support`` (per product).

    A fresh dict each call (callers may modify it)."""
    key = _resolve(torch_npu_version, cuda_api_versions(), "torch.cuda mapping")
    return {name: {k: (dict(v) if isinstance(v, dict) else v) for k, v in entry.items()}
            for name, entry in _cuda_map(key).items()}


def _latest_at(by_version: Dict[str, Any], key: str) -> Any:
    found = None
    for v in sorted(by_version, key=_minor):
        if _minor(v) <= _minor(key):
            found = by_version[v]
    return found


@functools.lru_cache(maxsize=None)
def _cuda_map(key: str) -> Dict[str, Dict[str, Any]]:
    out: Dict[str, Dict[str, Any]] = {}
    for name, info in load_table("cuda_api_map.json")["names"].items():
        row = None
        for step in info["history"]:  # change points, oldest first
            if _minor(step["from"]) <= _minor(key):
                row = step
        if row is None:
            continue
        entry: Dict[str, Any] = {"status": row["status"], "npu_name": row["npu_name"], "note": row["note"],
                                 "torch": tuple(info["torch"])}
        doc = _latest_at(info.get("docs", {}), key)
        if doc:
            entry.update(doc)
        out[name] = entry
    return out


# ---------------------------------------------------------------- version matrix

def version_matrix() -> List[Dict[str, Any]]:
    """torch_npu / torch / CANN rows, newest torch_npu first. Each row has ``torch_npu``, ``torch``
    (``"2.5.1"``), ``cann`` (``"8.2.RC1"``, None when unpublished), ``branch`` (Ascend/pytorch release
    branch or None), ``status`` (``"active"``, ``"historical"`` = EOL table, ``"pypi-only"`` = on PyPI
    but not in Ascend's matrix), ``on_pypi``, ``beta`` and ``source``. A fresh list each call."""
    return [dict(r) for r in load_table("version_matrix.json")["rows"]]


def python_support(torch_version: str) -> Optional[Tuple[str, ...]]:
    """Python versions (``("3.9", "3.10", "3.11")``) torch_npu supports for a torch release line
    (matched on major.minor), or None if no source states them."""
    table = load_table("version_matrix.json")["python"]
    found = table.get("%d.%d" % _minor(torch_version))
    return tuple(found["versions"]) if found is not None else None


def recommended(torch_version: str) -> Optional[Dict[str, Any]]:
    """The torch_npu row to install for a torch version, or None if no torch_npu release pairs with it.

    Matches on major.minor.patch when the given version has a patch level (``"2.7.1"``), else on
    major.minor; local suffixes (``"+cpu"``) are ignored. Among matches, rows from Ascend's matrix
    (which name a CANN version) win over PyPI-only releases; then the newest torch_npu wins.
    """
    want = _versions.release(torch_version)
    if len(want) < 2:
        want = _minor(torch_version)
    want = want[:3]
    matches = [row for row in version_matrix()  # newest first
               if row["torch"] and _versions.release(row["torch"])[:len(want)] == want]
    documented = [r for r in matches if r["status"] != "pypi-only"]
    return (documented or matches or [None])[0]


def recommended_combination() -> Dict[str, Any]:
    """Ascend's currently recommended combination: ``torch_npu``, ``torch``, ``cann``, ``python``."""
    return dict(load_table("version_matrix.json")["recommended"])


@functools.lru_cache(maxsize=1)
def torch_c_cuda() -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The private ``torch._C`` names about CUDA (``torch_c_cuda.json``, from torch's type stubs), relative to
    ``torch._C``: (names torch registers only in CUDA builds (a submodule's members dotted: ``"_cudnn.getVersionInt"``),
    switches of CUDA-only technologies every build has: ``"_jit_set_nvfuser_enabled"``)."""
    table = load_table("torch_c_cuda.json")
    return frozenset(table["cuda_build"]), frozenset(table["gpu_switches"])
