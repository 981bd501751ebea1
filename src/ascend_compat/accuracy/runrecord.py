"""The run record: what one training run computed, in numbers small enough to carry between machines.

``ascend-compat compare --record FILE`` writes one (the reference: on a CUDA machine with the shim off,
or on the host in float64 or float32); ``--against FILE`` compares a run with it (:mod:`.drift`). The
file is JSON, versioned (:data:`SCHEMA`, :data:`VERSION`), written atomically, and size-bounded: at most
``max_steps`` steps, :data:`MAX_MODULE_CALLS` module calls and :data:`MAX_OP_CALLS` op calls per step
(op calls only for the first ``op_steps`` steps), about 200 bytes each; what was cut is counted in
``truncated``.

Layout (version 1.0; the header is :mod:`ascend_compat._schemas`'s, read by any reader of the same major
version)::

    {"schema": "ascend-compat/run-record", "schema_version": "1.0",
     "run": {"script": ..., "argv": [...], "device": "npu (simulated)", "precision": "float64" | "as run",
             "torch": "2.13.0", "ascend_compat": "..."},
     "steps": [{"step": 0,
                "losses": [2.31, ...],                       # every backward() of the step, in order
                "modules": [{"module": "GPT.transformer.h.0.ln_1", "call": 1, "site": ["model.py", 110],
                             "input": STATS, "output": STATS,          # in the order the forwards finished
                             "autocast": "bfloat16" | null, "hf32": ["conv"]}, ...],  # the precision by design
                "grads": {"transformer.h.0.ln_1.weight": STATS, ...},  # at optimizer.step()
                "ops": [{"op": "aten::mm", "module": "...", "call": 3, "phase": "forward",
                         "site": ["model.py", 58], "output": STATS}, ...]}],
     "truncated": {"steps": 0, "module_calls": 0, "op_calls": 0}}

``STATS`` (:func:`stats`) sketches a tensor: dtype, element count, mean, root mean square, largest
magnitude, count of NaN/Inf, and four random projections (the sums of its elements times fixed
pseudo-random signs; two tensors' projections differ by about the RMS of their difference, which is how
:mod:`.drift` measures a relative error without keeping the tensors).
"""
from __future__ import annotations

import functools
import json
import math
from typing import Any, Dict, List, Optional

from ascend_compat._schemas import VERSIONS, readable, schema_id

__all__ = ["SCHEMA", "VERSION", "stats", "first_floating", "relative_error", "RunRecord", "RecordError", "load", "MAX_MODULE_CALLS",
           "MAX_OP_CALLS"]

SCHEMA = schema_id("run-record")
VERSION = VERSIONS["run-record"]
MAX_MODULE_CALLS = 20_000
MAX_OP_CALLS = 50_000
_PERIOD = 65_537  # the signs repeat with this (prime) period
_PROJECTIONS = 4


class RecordError(ValueError):
    """A run record that cannot be read (the message says why and what to do)."""


@functools.lru_cache(maxsize=None)
def _signs():
    import torch

    g = torch.Generator().manual_seed(20240601)
    return (torch.randint(0, 2, (_PERIOD, _PROJECTIONS), generator=g, dtype=torch.int8) * 2 - 1).to(torch.float64)


def stats(t) -> Dict[str, Any]:
    """The sketch of tensor ``t`` (any device, any dtype; complex as its real view). Its own ops run with the
    dispatch and function modes set aside, so no observer (nor the float64 golden run) sees them."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), torch._C.DisableTorchFunction():
        return _stats(t)


def _stats(t) -> Dict[str, Any]:
    import torch

    x = t.detach()
    if x.is_complex():
        x = torch.view_as_real(x)
    x = x.to("cpu", torch.float64).reshape(-1)
    n = x.numel()
    out: Dict[str, Any] = {"dtype": str(t.dtype).replace("torch.", ""), "n": n}
    finite = torch.isfinite(x)
    bad = n - int(finite.sum())
    if bad:
        x = torch.where(finite, x, torch.zeros_like(x))
    if n == 0:
        return {**out, "mean": 0.0, "rms": 0.0, "absmax": 0.0, "nonfinite": 0, "proj": [0.0] * _PROJECTIONS}
    q, r = divmod(n, _PERIOD)
    s = _signs()
    proj = x[: q * _PERIOD].view(q, _PERIOD).sum(0) @ s if q else torch.zeros(_PROJECTIONS, dtype=torch.float64)
    if r:
        proj = proj + x[q * _PERIOD:] @ s[:r]
    return {**out, "mean": float(x.mean()), "rms": float(x.square().mean().sqrt()), "absmax": float(x.abs().max()),
            "nonfinite": bad, "proj": [float(p) for p in proj]}


def relative_error(a: Dict[str, Any], ref: Dict[str, Any]) -> float:
    """About ``rms(a - ref) / rms(ref)`` for two sketches of the same tensor in two runs (inf when one has
    NaN/Inf the other has not or the shapes differ; 0 for two empty tensors)."""
    if a["n"] != ref["n"] or a.get("nonfinite", 0) != ref.get("nonfinite", 0):
        return math.inf
    n = ref["n"]
    if n == 0:
        return 0.0
    diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(a["proj"], ref["proj"])) / len(ref["proj"]))
    scale = ref["rms"] * math.sqrt(n)
    if scale == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return diff / scale


def first_floating(value) -> Optional[Any]:
    """The first floating tensor in ``value`` (a tensor, nested lists/tuples/dicts, a ``ModelOutput``)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value if (value.is_floating_point() or value.is_complex()) else None
    if isinstance(value, (list, tuple)):
        for v in value:
            found = first_floating(v)
            if found is not None:
                return found
    if isinstance(value, dict):
        for v in value.values():
            found = first_floating(v)
            if found is not None:
                return found
    logits = getattr(value, "logits", None)  # transformers' ModelOutput
    return first_floating(logits) if logits is not None else None


class RunRecord:
    """A run record being written (:meth:`add_loss` ... :meth:`save`) or read (:func:`load`)."""

    def __init__(self, run: Optional[Dict[str, Any]] = None, max_steps: Optional[int] = None, op_steps: int = 1) -> None:
        self.run = dict(run or {})
        self.max_steps, self.op_steps = max_steps, op_steps
        self.steps: List[Dict[str, Any]] = []
        self.truncated = {"steps": 0, "module_calls": 0, "op_calls": 0}
        self._full = False
        self._new_step()

    # ------------------------------------------------------------------ writing
    def _new_step(self) -> None:
        self.steps.append({"step": len(self.steps), "losses": [], "modules": [], "grads": {}, "ops": []})

    @property
    def current(self) -> Dict[str, Any]:
        return self.steps[-1]

    @property
    def recording(self) -> bool:
        """False once ``max_steps`` steps are recorded (later steps are only counted)."""
        return not self._full

    @property
    def recording_ops(self) -> bool:
        return self.recording and len(self.steps) <= self.op_steps

    def end_step(self) -> None:
        """The step ends (``optimizer.step()`` ran)."""
        if self._full:
            self.truncated["steps"] += 1
        elif self.max_steps is not None and len(self.steps) >= self.max_steps:
            self._full = True
        else:
            self._new_step()

    def add_loss(self, value: float) -> None:
        if self.recording:
            self.current["losses"].append(value)

    def add_module(self, module: str, call: int, site, inputs, output, precision: Optional[Dict[str, Any]] = None) -> None:
        """``precision``: what the run computed the module in by design, ``{"autocast": dtype or None,
        "hf32": [the op groups torch_npu's HF32 switches were on for]}``."""
        if not self.recording:
            return
        rows = self.current["modules"]
        if len(rows) >= MAX_MODULE_CALLS:
            self.truncated["module_calls"] += 1
            return
        rows.append({"module": module, "call": call, "site": list(site[:2]) if site else None,
                     "input": inputs, "output": output, **(precision or {})})

    def add_grad(self, name: str, sketch: Dict[str, Any]) -> None:
        if self.recording:
            self.current["grads"][name] = sketch

    def add_op(self, op: str, module: str, call: int, phase: str, site, output) -> None:
        if not self.recording_ops:
            return
        rows = self.current["ops"]
        if len(rows) >= MAX_OP_CALLS:
            self.truncated["op_calls"] += 1
            return
        rows.append({"op": op, "module": module, "call": call, "phase": phase,
                     "site": list(site[:2]) if site else None, "output": output})

    def to_dict(self) -> Dict[str, Any]:
        steps = [s for s in self.steps if s["losses"] or s["modules"] or s["grads"] or s["ops"]]
        return {"schema": SCHEMA, "schema_version": VERSION, "run": self.run, "steps": steps,
                "truncated": dict(self.truncated)}

    def save(self, path: str) -> None:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(path, json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=True) + "\n")


def load(path: str) -> Dict[str, Any]:
    """The record in ``path``; :class:`RecordError` when it is not one this version can read."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise RecordError(f"cannot read the run record {path!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RecordError(f"{path!r} is not a run record (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise RecordError(f"{path!r} is not a run record (no \"schema\": \"{SCHEMA}\"); write one with "
                          "ascend-compat compare --record FILE")
    version = data.get("schema_version")
    if not readable("run-record", version):
        raise RecordError(f"{path!r} is a version {version} run record; this ascend-compat reads version {VERSION}: "
                          "record the reference again with this version")
    if not isinstance(data.get("steps"), list):
        raise RecordError(f"{path!r} has no steps")
    return data
