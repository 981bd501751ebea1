"""An op call re-run on the host: the CUDA stand-in and the float64 golden of :mod:`.standard`.

:class:`HostRun` snapshots an op's tensor arguments on the host *before* the NPU runs it (in-place and
``out=`` forms overwrite them), then computes on demand:

* :meth:`HostRun.standin` - the op on host copies in the NPU's own dtypes: what CUDA computes, up to
  summation order. With ``tf32=True`` the float32 operands a convolution or matmul multiplies are first
  rounded to TF32 (10-bit mantissa, to nearest even: the operands ``ascend_compat.simulator.numerics``
  names, with its rounding), as CUDA does while ``torch.backends.cudnn.allow_tf32`` (convolutions, on
  by default) or ``torch.backends.cuda.matmul.allow_tf32`` (matmuls, off by default) is set;
* :meth:`HostRun.golden` - the op on the inputs upcast to float64 (complex128); where the host has no
  float64 kernel for it, on msprobe's golden dtype instead (float32 for float16/bfloat16 inputs,
  ``PRECISION_MAPPING``), else None;
* :meth:`HostRun.with_values` - the op with some arguments replaced (the float64 shadows of
  :mod:`.float64`).

``npu::`` ops run their CPU reference (the simulated NPU's own, ``simulator.torch_npu.fused``), which
is pure torch code; an ``npu::`` op without one cannot be re-run. Only numbers are kept afterwards.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

__all__ = ["HostRun", "host_function", "tf32_switches", "hf32_switches", "group_of", "written_outputs"]


def group_of(name: str) -> Optional[str]:
    """``"conv"`` / ``"matmul"`` for the ops TF32 and HF32 govern (an ``npu::`` op counts as a matmul: its
    reference multiplies with torch matmuls), else None."""
    from ascend_compat.simulator import numerics

    if name in numerics.CONV_OPS:
        return "conv"
    if name in numerics.MATMUL_OPS or name.startswith("npu::"):
        return "matmul"
    return None


def tf32_switches() -> Dict[str, bool]:
    """CUDA's TF32 switches as the script left them: ``{"conv": cudnn.allow_tf32, "matmul": cuda.matmul.allow_tf32}``."""
    import torch

    return {"conv": bool(torch.backends.cudnn.allow_tf32), "matmul": bool(torch.backends.cuda.matmul.allow_tf32)}


def hf32_switches() -> Dict[str, bool]:
    """torch_npu's HF32 switches (``torch.npu.conv.allow_hf32`` on by default, ``torch.npu.matmul.allow_hf32``
    off), on real torch_npu and on the simulated NPU; both False where there is no ``torch.npu``."""
    import torch

    npu = getattr(torch, "npu", None)
    out = {}
    for group in ("conv", "matmul"):
        holder = getattr(npu, group, None)
        out[group] = bool(getattr(holder, "allow_hf32", False))
    return out


def host_function(func) -> Optional[Callable]:
    """What re-runs ``func`` (an ``OpOverload``) on host tensors: the op itself for aten and other
    namespaces with CPU kernels, the CPU reference for ``npu::`` ops (None when there is none)."""
    ns = func._schema.name.split("::", 1)[0]
    if ns != "npu":
        return func
    from ascend_compat.simulator.torch_npu import fused

    overload = func._overloadname
    base = func._schema.name.split("::", 1)[1]
    return fused.OVERLOADS.get(base if overload in ("", "default") else f"{base}.{overload}")


_TF32 = None


def _tf32_mode():
    """A ``TorchDispatchMode`` class rounding the float32 multiplicands of the ops TF32/HF32 govern
    (``simulator.numerics.MULTIPLICANDS``) to a 10-bit mantissa, to nearest even, on the host."""
    global _TF32
    if _TF32 is not None:
        return _TF32
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from ascend_compat.simulator import numerics

    f32 = torch.float32
    # below autograd (where the comparison re-runs ops) composites such as aten::matmul arrive whole
    multiplicands = {**numerics.MULTIPLICANDS, "aten::matmul": (0, 1), "aten::linear": (0, 1)}

    class _TF32Host(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            rounded = multiplicands.get(func._schema.name, ()) if func._overloadname == "default" else ()
            if rounded:
                args = tuple(numerics.hf32_round(a) if i in rounded and isinstance(a, torch.Tensor) and a.dtype == f32
                             else a for i, a in enumerate(args))
            return func(*args, **kwargs)

    _TF32 = _TF32Host
    return _TF32


def written_outputs(func, args, kwargs):
    """The arguments an in-place or ``out=`` op writes (its results), as ``[(position or name, value)]``."""
    out = []
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is not None and arg.alias_info.is_write:
            key = arg.name if (arg.kwarg_only or i >= len(args)) else i
            value = kwargs.get(key) if isinstance(key, str) else args[key]
            if value is not None:
                out.append((key, value))
    return out


class HostRun:
    """One op call to re-run on the host (see the module docstring). ``function`` is what runs
    (:func:`host_function`); ``name`` the op's qualified name (``"aten::mm"``)."""

    def __init__(self, function: Callable, name: str, args: tuple, kwargs: dict, device: str,
                 written: Tuple = ()) -> None:
        import torch
        from torch.utils._pytree import tree_map

        self.function, self.name = function, name
        self.written = written  # positions/names of written arguments (their after-values are the results)
        tensor, cpu = torch.Tensor, torch.device("cpu")

        def snap(x):
            if isinstance(x, torch.device) and x.type == device:
                return cpu  # a backward's cast back to the NPU (_to_copy(..., device=npu:0)) stays on the host
            if not isinstance(x, tensor):
                return x
            h = x.detach().to("cpu")
            return h.clone() if x.device.type != device or h.data_ptr() == x.data_ptr() else h

        self.args, self.kwargs = tree_map(snap, (tuple(args), dict(kwargs)))
        self._golden: Any = None
        self._golden_done = False

    # ------------------------------------------------------------------ runs
    def _call(self, args, kwargs):
        from torch.utils._pytree import tree_map
        import torch

        res = self.function(*args, **kwargs)
        if self.written:
            picked = [kwargs[k] if isinstance(k, str) else args[k] for k in self.written]
            return picked[0] if len(picked) == 1 else tuple(picked)
        return tree_map(lambda x: x.detach() if isinstance(x, torch.Tensor) else x, res)

    def _fresh(self, convert: Optional[Callable] = None):
        """Copies of the snapshot (the op may write into them), converted by ``convert(tensor, position)``."""
        import torch
        from torch.utils._pytree import tree_map

        def copy(x, pos=None):
            if not isinstance(x, torch.Tensor):
                return x
            y = convert(x, pos) if convert is not None else x
            return y.clone() if y is x else y

        args = tuple(copy(a, i) if isinstance(a, torch.Tensor) else tree_map(copy, a) for i, a in enumerate(self.args))
        kwargs = {k: tree_map(copy, v) for k, v in self.kwargs.items()}
        return args, kwargs

    def standin(self, tf32: bool = False):
        """The op in the NPU's dtypes on the host (raises what the host raises); with ``tf32`` every float32
        convolution and matmul it runs (itself, or inside an ``npu::`` op's reference) multiplies
        TF32-rounded operands."""
        if not tf32:
            return self._call(*self._fresh())
        with _tf32_mode()():
            return self._call(*self._fresh())

    def golden(self):
        """The op on float64 inputs (msprobe's golden dtype where float64 has no kernel); None when neither runs."""
        if self._golden_done:
            return self._golden
        import torch

        self._golden_done = True
        for wide in ({torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64},
                     {torch.float16: torch.float32, torch.bfloat16: torch.float32}):
            def up(x, pos, wide=wide):
                if x.is_complex():
                    return x.to(torch.complex128) if x.dtype != torch.complex128 else x
                return x.to(wide[x.dtype]) if x.dtype in wide else x

            try:
                self._golden = self._call(*self._fresh(up))
                return self._golden
            except Exception:  # noqa: BLE001 - no kernel for this dtype: try the next, then give up
                continue
        return None

    def with_values(self, replace: Dict[int, Any]):
        """The op with the tensors at flat positions ``replace`` (see :meth:`flat_tensors`) swapped."""
        import torch
        from torch.utils._pytree import tree_flatten, tree_unflatten

        flat, spec = tree_flatten((self.args, self.kwargs))
        flat = [replace[i] if i in replace else (x.clone() if isinstance(x, torch.Tensor) else x)
                for i, x in enumerate(flat)]
        args, kwargs = tree_unflatten(flat, spec)
        return self._call(args, kwargs)
