"""The float64 golden run: the script computing every floating op in float64, as a reference run.

:class:`Float64Mode` is a ``TorchDispatchMode`` for the reference run of ``ascend-compat compare
--record FILE --precision float64`` (and ``--drift float64``): each op's floating tensor arguments are
upcast to float64 (complex to complex128), a cast to a narrower floating dtype (autocast's, a script's
``.bfloat16()``) becomes a cast to float64, and ops that take a floating ``dtype`` get float64. So the
run computes what the script's mathematics gives, and a module or op where the run being checked loses
precision (a bfloat16 cast inside a LayerNorm, a float16 sum over a long sequence) stands out against it.

What is *not* changed, so both runs start from the same numbers and keep their aliasing:

* ops without tensor arguments (factories: ``torch.empty``, ``torch.zeros``) and random ops run in the
  dtype asked for (a float64 random stream would draw other numbers), so parameters are created and
  initialised exactly as in the run being checked, and stay in their dtype (an in-place update of a
  float32 parameter rounds to float32);
* views run on their base as it is;
* the tensors an in-place or ``out=`` op writes keep their dtype.

An op that refuses float64 (a kernel without it, an argument that must be float32) runs as the script
wrote it and its results are upcast; :attr:`Float64Mode.refused` counts those per op.
"""
from __future__ import annotations

from typing import Dict

__all__ = ["Float64Mode"]


def Float64Mode():  # noqa: N802 - a class made on first use (torch is imported only then)
    """A new float64 ``TorchDispatchMode`` (see the module docstring); enter it around the run."""
    return _mode_type()()


_TYPE = None


def _mode_type():
    global _TYPE
    if _TYPE is not None:
        return _TYPE
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    f64, c128 = torch.float64, torch.complex128
    Tensor = torch.Tensor
    aten = torch.ops.aten
    seeded = torch.Tag.nondeterministic_seeded
    to_copy = aten._to_copy.default
    current_node = torch._C._current_autograd_node
    half_to_float = {aten._softmax.default, aten._log_softmax.default}
    input_dtype = {aten._softmax_backward_data.default, aten._log_softmax_backward_data.default}

    def wide(dtype):
        if isinstance(dtype, torch.dtype):
            if dtype.is_complex:
                return c128
            if dtype.is_floating_point:
                return f64
        return dtype

    def up(x):
        if isinstance(x, Tensor) and (x.is_floating_point() or x.is_complex()) and wide(x.dtype) != x.dtype:
            return x.to(wide(x.dtype))
        return x

    def written(func):
        return {i for i, a in enumerate(func._schema.arguments) if a.alias_info is not None and a.alias_info.is_write}

    class _Float64(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.refused: Dict[str, int] = {}
            self._written: Dict[object, set] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func.is_view or seeded in func.tags:
                return func(*args, **kwargs)
            if func is to_copy and current_node() is not None:
                return func(*args, **kwargs)  # a backward's cast back to its forward input's dtype: autograd insists
            flat = [a for a in (*args, *kwargs.values())]
            if not any(isinstance(a, Tensor) or (isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a))
                       for a in flat):
                return func(*args, **kwargs)  # a factory
            keep = self._written.get(func)
            if keep is None:
                keep = self._written[func] = written(func)
            names = [a.name for a in func._schema.arguments]
            new_args = tuple(a if i in keep else tree_map(up, a) for i, a in enumerate(args))
            new_kwargs = {}
            for k, v in kwargs.items():
                if k in names and names.index(k) in keep:
                    new_kwargs[k] = v
                elif k == "dtype":
                    new_kwargs[k] = wide(v)
                else:
                    new_kwargs[k] = tree_map(up, v)
            if func in half_to_float:
                new_args = new_args[:2] + (False,)
            elif func in input_dtype:
                new_args = new_args[:3] + (f64,)
            try:
                return func(*new_args, **new_kwargs)
            except Exception:  # noqa: BLE001 - no float64 for this op: as written, results upcast
                name = str(func)
                self.refused[name] = self.refused.get(name, 0) + 1
                out = func(*args, **kwargs)
                return out if keep else tree_map(up, out)

    _TYPE = _Float64
    return _TYPE
