"""What ``.item()`` of a storage-less tensor answers in a plan: the value a healthy run would see.

A plan's tensors have no data, yet scripts and libraries decide on values: GradScaler and DeepSpeed skip
the optimizer step when their overflow flag is set, ``clip_grad_norm_`` and DeepSpeed check the norm is
finite, losses are divided by token counts. A plan follows the control flow of a healthy run (finite
values, no overflow), so it keeps one stand-in value per storage (every element of a storage holds it):

* 1 (``True``, ``1.0``) where nothing says otherwise (the weights, activations and gradients of a healthy
  run: finite and non-zero);
* factories and fills set it (``zeros``, ``full``, ``fill_``, ``zero_``, ``*_like``, ``new_*``); copies
  pass it on (``_to_copy``, ``clone``, ``copy_``; views share their storage's), and a real host tensor
  that goes to the device brings its own value (when all its elements are equal);
* pointwise ops (``torch.Tag.pointwise``, and the ``_foreach_`` forms of pointwise ops) compute it from
  their inputs' values: ``isfinite`` of a healthy value is True, ``isinf``/``isnan`` False, so overflow
  checks built from them (DeepSpeed's ``has_inf_or_nan``) find none;
* reductions compute it from the count they reduce: ``sum`` is value x count, ``mean``/``amax``/``amin``/
  ``max``/``min`` the value, ``any``/``all`` its truth, vector norms ``|value| x count^(1/p)``,
  ``std``/``var`` 0;
* collectives over a group of ``n`` ranks (all of them holding the same value in an SPMD plan): a sum is
  value x ``n``, an average, maximum, minimum, gather or broadcast the value;
* ``torch._amp_foreach_non_finite_check_and_unscale_`` leaves ``found_inf`` as it is (a healthy step has
  no inf) and ``torch._amp_update_scale_`` grows the scale as a run without overflow does;
* any other op that writes a tensor resets it to 1.

So GradScaler's ``found_inf`` stays 0 and the optimizer steps, DeepSpeed's overflow flag (all-reduced
with MAX) is 0, a token count is the number of tokens. What this cannot give: values that depend on the
data (a loss, an argmax, the shape of ``nonzero``).
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import _disable_current_modes

__all__ = ["StandIns", "is_fake"]

_COPIES = {"_to_copy", "clone", "lift_fresh_copy", "_copy_from", "_copy_from_and_resize", "detach_copy",
           "alias_copy", "contiguous", "repeat", "expand_copy", "index_select", "gather", "index", "embedding",
           "select_copy", "slice_copy", "t_copy", "view_copy", "_unsafe_view", "cat", "stack", "narrow_copy",
           "constant_pad_nd"}
_ZEROS = {"zeros", "zeros_like", "new_zeros", "zero_", "_foreach_zero_"}
_ONES = {"ones", "ones_like", "new_ones"}
_FULL = {"full": 1, "full_like": 1, "new_full": 2, "fill_": 1, "scalar_tensor": 0}
_SAME = {"mean", "amax", "amin", "max", "min", "nanmean", "median", "nanmedian"}
_ZERO_SPREAD = {"std", "var", "std_mean", "var_mean"}
_COLLECTIVES = {"allreduce_", "broadcast_", "allgather_", "_allgather_base_", "reduce_scatter_",
                "_reduce_scatter_base_", "all_reduce", "all_reduce_", "all_gather_into_tensor",
                "all_gather_into_tensor_out", "reduce_scatter_tensor", "broadcast"}


def _kind_of(func) -> str:
    ns, _, rest = func._schema.name.partition("::")
    base = rest
    if ns in ("c10d", "_c10d_functional"):
        return "collective" if base in _COLLECTIVES else "other"
    if ns != "aten":
        return "other"
    if func.is_view:
        return "view"
    if base in _COPIES:
        return "copy"
    if base == "copy_" or base == "_foreach_copy_":
        return "copy_into"
    if base in _ZEROS or base in _ONES or base in _FULL:
        return "fill"
    if torch.Tag.pointwise in func.tags:  # before the reductions: max.other, min.other are pointwise
        return "pointwise"
    if base in ("sum", "nansum", "count_nonzero", "any", "all", "prod", "linalg_vector_norm", "norm",
                "_foreach_norm") or base in _SAME or base in _ZERO_SPREAD:
        return "reduction"
    if base == "_amp_foreach_non_finite_check_and_unscale_":
        return "amp_unscale"
    if base == "_amp_update_scale_":
        return "amp_update"
    if base.startswith("_foreach_") and _pointwise_packet(base[len("_foreach_"):].rstrip("_")) is not None:
        return "foreach"
    return "other"


_PACKETS: Dict[str, Any] = {}


def _pointwise_packet(name: str):
    """``torch.ops.aten.<name>`` when one of its overloads is pointwise (None otherwise)."""
    if name not in _PACKETS:
        packet = getattr(torch.ops.aten, name, None)
        ok = False
        if packet is not None:
            for overload in packet.overloads():
                if torch.Tag.pointwise in getattr(packet, overload).tags:
                    ok = True
                    break
        _PACKETS[name] = packet if ok else None
    return _PACKETS[name]


def _written(func) -> Tuple[int, ...]:
    """Positions of the arguments ``func`` writes (``Tensor(a!)``)."""
    return tuple(i for i, a in enumerate(func._schema.arguments) if a.alias_info is not None and a.alias_info.is_write)


def _python(value, dtype: torch.dtype):
    if dtype == torch.bool:
        return bool(value)
    if dtype.is_complex:
        return complex(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


class StandIns:
    """The stand-in value of each storage that does not hold the default (see the module docstring).

    ``group_size(args, kwargs)`` gives the size of a collective's group."""

    def __init__(self, group_size: Callable[[tuple, dict], int]):
        self._values: Dict[int, Tuple[float, weakref.ref]] = {}
        self._kinds: Dict[Any, Tuple[str, Tuple[int, ...]]] = {}
        self._group_size = group_size

    # ---------------------------------------------------------------- reading

    def value(self, t: torch.Tensor):
        """The stand-in value of ``t`` (a Python number); a real (not fake) tensor's own when all its
        elements are equal."""
        if not is_fake(t):
            return _real_value(t)
        entry = self._values.get(_key(t))
        return entry[0] if entry is not None else 1

    def item(self, t: torch.Tensor):
        """What ``t.item()`` answers: its stand-in value as ``t``'s Python type."""
        return _python(self.value(t), t.dtype)

    # ---------------------------------------------------------------- writing

    def _set(self, t, value) -> None:
        if not isinstance(t, torch.Tensor) or not is_fake(t):
            return
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        key = st._cdata
        if value == 1 and not isinstance(value, complex):
            self._values.pop(key, None)
            return
        old = self._values.get(key)
        ref = old[1] if old is not None else weakref.ref(st, lambda _r, key=key: self._values.pop(key, None))
        self._values[key] = (value, ref)

    def _reset(self, t) -> None:
        if isinstance(t, torch.Tensor):
            if self._values:
                self._set(t, 1)
        elif isinstance(t, (list, tuple)):
            for e in t:
                self._reset(e)

    # ---------------------------------------------------------------- ops

    def after(self, func, args: tuple, kwargs: dict, out) -> None:
        """Update the stand-ins after ``func(*args, **kwargs)`` returned ``out``."""
        found = self._kinds.get(func)
        if found is None:
            found = self._kinds[func] = (_kind_of(func), _written(func))
        kind, written = found
        if kind == "view":
            return
        try:
            getattr(self, "_" + kind)(func, args, kwargs, out, written)
        except Exception:  # a form this model does not follow: what it wrote holds the default
            self._other(func, args, kwargs, out, written)

    def _other(self, func, args, kwargs, out, written) -> None:
        if not self._values:
            return
        for i in written:
            if i < len(args):
                self._reset(args[i])
        for name, v in kwargs.items():
            if name == "out":
                self._reset(v)

    def _outputs(self, out) -> List[torch.Tensor]:
        if isinstance(out, torch.Tensor):
            return [out]
        if isinstance(out, (list, tuple)):
            return [t for t in out if isinstance(t, torch.Tensor)]
        return []

    def _copy(self, func, args, kwargs, out, written) -> None:
        name = func._schema.name.split("::")[1]
        src = args[0]
        if name in ("cat", "stack"):
            values = {self.value(t) for t in src if isinstance(t, torch.Tensor)}
            value = values.pop() if len(values) == 1 else 1
        else:  # the source is the first argument (embedding's: the weight)
            value = self.value(src)
        for t in self._outputs(out):
            self._set(t, _python(value, t.dtype))
        if "out" in kwargs:
            self._set(kwargs["out"], value)

    def _copy_into(self, func, args, kwargs, out, written) -> None:
        dst, src = args[0], args[1]
        if isinstance(dst, (list, tuple)):
            for d, s in zip(dst, src):
                self._set(d, _python(self.value(s), d.dtype))
        else:
            self._set(dst, _python(self.value(src), dst.dtype))

    def _fill(self, func, args, kwargs, out, written) -> None:
        name = func._schema.name.split("::")[1]
        if name in _ZEROS:
            value = 0
        elif name in _ONES:
            value = 1
        else:
            v = args[_FULL[name]] if len(args) > _FULL[name] else kwargs.get("fill_value", kwargs.get("value"))
            value = self.value(v) if isinstance(v, torch.Tensor) else v
        targets = args[0] if name == "_foreach_zero_" else (args[0] if name in ("zero_", "fill_") else out)
        for t in (targets if isinstance(targets, (list, tuple)) else [targets]):
            if isinstance(t, torch.Tensor):
                self._set(t, _python(value, t.dtype))

    def _pointwise(self, func, args, kwargs, out, written) -> None:
        value = self._compute(func, args, kwargs)
        for t in self._outputs(out):
            self._set(t, _python(value, t.dtype))
        if "out" in kwargs:
            for t in self._outputs(kwargs["out"]):
                self._set(t, _python(value, t.dtype))

    def _foreach(self, func, args, kwargs, out, written) -> None:
        name = func._schema.name.split("::")[1][len("_foreach_"):]
        inplace = name.endswith("_")
        packet = _pointwise_packet(name.rstrip("_"))
        lists = [a for a in args if isinstance(a, (list, tuple))]
        n = len(lists[0])
        targets = args[0] if inplace else out
        for i in range(n):
            item_args = tuple(a[i] if isinstance(a, (list, tuple)) else a for a in args)
            value = self._compute(packet, item_args, kwargs)
            t = targets[i]
            self._set(t, _python(value, t.dtype))

    def _compute(self, op, args, kwargs):
        """``op`` on 0-dim real tensors holding the stand-ins of its tensor arguments: the output's value."""
        def stand_in(a):
            if isinstance(a, torch.Tensor):
                return torch.tensor(self.value(a), dtype=a.dtype)
            return a

        real_args = tuple(stand_in(a) for a in args)
        real_kwargs = {k: stand_in(v) for k, v in kwargs.items() if k not in ("out", "device", "layout", "pin_memory")}
        with _disable_current_modes():
            res = op(*real_args, **real_kwargs)
        if isinstance(res, (list, tuple)):
            res = res[0]
        return res.item() if isinstance(res, torch.Tensor) else res

    def _reduction(self, func, args, kwargs, out, written) -> None:
        name = func._schema.name.split("::")[1]
        if name == "_foreach_norm":
            p = float(args[1]) if len(args) > 1 and args[1] is not None else 2.0
            for src, dst in zip(args[0], out):
                self._set(dst, _python(_norm(self.value(src), src.numel(), p), dst.dtype))
            return
        src = args[0]
        outs = self._outputs(out)
        if not outs:
            return
        first = outs[0]
        count = src.numel() // max(1, first.numel())
        v = self.value(src)
        if name in ("sum", "nansum"):
            value = v * count
        elif name == "count_nonzero":
            value = count if v != 0 else 0
        elif name == "any" or name == "all":
            value = bool(v) if count else name == "all"
        elif name == "prod":
            value = _power(v, count)
        elif name in ("linalg_vector_norm", "norm"):
            p = args[1] if len(args) > 1 and args[1] is not None else kwargs.get("ord", kwargs.get("p", 2))
            value = _norm(v, count, float(p))
        elif name in _ZERO_SPREAD:
            value = 0
        else:
            value = v
        self._set(first, _python(value, first.dtype))
        for other in outs[1:]:  # (values, indices), (std, mean)
            self._set(other, _python(v if name in ("std_mean", "var_mean") else 0, other.dtype))

    def _collective(self, func, args, kwargs, out, written) -> None:
        ns, _, name = func._schema.name.partition("::")
        n = self._group_size(args, kwargs)
        if ns == "c10d":
            reduce_op = str(args[3] if name in ("reduce_scatter_", "_reduce_scatter_base_") else
                            (args[2] if name == "allreduce_" else "")).upper()
            src = args[1] if name in ("reduce_scatter_", "_reduce_scatter_base_", "allgather_", "_allgather_base_") \
                else args[0]
            dst = args[0]
        else:
            reduce_op = str(args[1]).upper() if name.startswith(("all_reduce", "reduce_scatter")) else ""
            src, dst = args[0], (args[0] if name.endswith("_") else out)
            if name == "all_gather_into_tensor_out":
                dst = kwargs.get("out", out)
        value = _first_value(self, src)
        if "SUM" in reduce_op:
            value = value * n
        elif "PRODUCT" in reduce_op or "PROD" in reduce_op:
            value = _power(value, n)
        for t in _flat(dst):
            self._set(t, _python(value, t.dtype))

    def _amp_unscale(self, func, args, kwargs, out, written) -> None:
        grads, inv_scale = args[0], args[2]
        scale = self.value(inv_scale)
        for g in grads:
            self._set(g, _python(self.value(g) * scale, g.dtype))
        # found_inf (args[1]) keeps its value: a healthy step has no inf or nan

    def _amp_update(self, func, args, kwargs, out, written) -> None:
        scale, tracker, found_inf, growth, backoff, interval = args[:6]
        if self.value(found_inf):
            self._set(scale, float(self.value(scale)) * backoff)
            self._set(tracker, 0)
            return
        steps = int(self.value(tracker)) + 1
        if steps == interval:
            self._set(scale, float(self.value(scale)) * growth)
            steps = 0
        self._set(tracker, steps)


def _first_value(standins: StandIns, src):
    for t in _flat(src):
        return standins.value(t)
    return 1


def _flat(x) -> List[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        out: List[torch.Tensor] = []
        for e in x:
            out.extend(_flat(e))
        return out
    return []


def _norm(v, count: int, p: float):
    v = abs(v)
    if math.isinf(p):
        return v
    if p == 0:
        return count if v else 0
    return v * count ** (1.0 / p)


def _power(v, n: int):
    try:
        return v ** n
    except OverflowError:
        return math.inf


def _key(t: torch.Tensor) -> Optional[int]:
    try:
        return t.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None


def is_fake(t) -> bool:
    """``t`` is a FakeTensor (storage-less)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _real_value(t: torch.Tensor):
    """A real tensor's value for the constant model: its element when it has one (or all equal), else 1."""
    with _disable_current_modes():
        if t.numel() == 0:
            return 1
        flat = t.reshape(-1)
        first = flat[0]
        if t.numel() == 1 or bool((flat == first).all()):
            return first.item()
    return 1
