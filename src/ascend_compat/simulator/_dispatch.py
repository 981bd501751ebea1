"""The boxed PrivateUse1 kernel: runs every aten op of the simulated NPU on host aliases.

Per call (the per-op facts are computed once into a ``_plan.Plan``, cached per OpOverload and mode):

1. special ops (``_plan.SPECIAL``, filled by ``_special_ops``) run their own function;
2. view ops (every return a non-writing alias), ops tagged ``inplace_view`` and ``set_`` are
   redispatched to the CPU kernel *on the device tensors themselves*: those kernels only touch
   metadata, so the result is a true view of the device storage with a shared version counter
   (docs/simulator_pitfalls.md, pitfall 5);
3. everything else: npu tensors become zero-copy CPU aliases, devices are checked (torch's
   mixed-device wording), Python numbers in Tensor positions are re-wrapped as 0-dim tensors
   (docs/simulator_pitfalls.md, pitfall 3), the device generator is substituted for seeded ops, the CPU kernel runs, and the
   results map back: mutated arguments are returned as the original device tensors, new outputs
   are adopted onto the device through the memory funnel. ``out=`` kernels that need to resize a
   DLPack-backed output are retried into fresh CPU outputs (docs/simulator_pitfalls.md, pitfall 4).
"""
from __future__ import annotations

import functools

from typing import Optional

import torch

from ascend_compat.simulator import _dtype_support, _fallback, _host, _memory, _plan, _rng, _state
from ascend_compat.simulator._plan import Plan, plan_for

_CPU_KS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_Tensor = torch.Tensor
_adopt = _memory.adopt
_KDL_CPU = _memory.KDL_CPU
_NPU = "npu"
_NOT_RESIZABLE = "not resizable"

#: torch_npu's error for a CPU tensor among an NPU op's inputs (CalcuOpUtil.cpp / DeviceUtils.h, with
#: OPS_ERROR(ErrCode::TYPE): "ERR01002 OPS invalid type")
NPU_EXPECTED = ("Expected all tensors to be on the same device. Expected NPU tensor, please check whether the "
                "input tensor device is correct.")


def mixed_device_error(a, b) -> RuntimeError:
    """torch_npu's mixed-device error: its own wording and ERR01002 when one side is the CPU; torch's
    wording when two NPUs are mixed (npu:0 and npu:1), as torch_npu reports that case."""
    if "cpu" in (str(a), str(b)):
        from ascend_compat.simulator import _error_code

        return RuntimeError(NPU_EXPECTED + _error_code.cpp_error("OPS", "TYPE"))
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!")


class _Conv:
    """Argument conversion state for one call."""

    __slots__ = ("index", "aliases")

    def __init__(self):
        self.index = None
        self.aliases = None


def _to_host(t, conv: _Conv, allow_cpu: bool, write: bool = True):
    if t.is_cpu:
        if t.dim() != 0 and not allow_cpu:
            if conv.aliases is None:
                conv.aliases = []
            conv.aliases.append(t)  # reported as a mixed-device error once the device is known
        return t
    if t.is_meta:
        return t
    idx = t.get_device()
    if conv.index is None:
        conv.index = idx
    elif conv.index != idx:
        raise mixed_device_error(f"npu:{conv.index}", f"npu:{idx}")
    return _memory.host_for(t, write)


def _convert(x, conv: _Conv, is_tensor_slot: bool, allow_cpu: bool, write: bool = True):
    """Host form of one argument; ``write`` False (an argument the schema does not mark as
    written) allows the allocation's own host tensor instead of a fresh retag."""
    if isinstance(x, _Tensor):
        return _to_host(x, conv, allow_cpu, write)
    if isinstance(x, (list, tuple)):
        if x and any(isinstance(e, _Tensor) for e in x):
            return [(_to_host(e, conv, allow_cpu, write) if isinstance(e, _Tensor) else e) for e in x]
        return x
    if is_tensor_slot and isinstance(x, (int, float, bool, complex)):
        return _host.tensor(x)  # a Python number arrived in a Tensor position (wrapped number)
    if isinstance(x, torch.device) and x.type == _NPU:
        if conv.index is None and x.index is not None:
            conv.index = _state.check_index(x.index)
        return torch.device("cpu")
    return x


def _check_cpu_mix(conv: _Conv):
    if conv.aliases:
        idx = conv.index if conv.index is not None else _state.current_device()
        raise mixed_device_error(f"npu:{idx}", "cpu")


def _wrap_out(res, index: int, plan: Plan, args, kwargs):
    """Map a CPU result back to device tensors."""
    ra = plan.returns_alias
    if ra is not None:
        if isinstance(res, _Tensor):
            tgt = ra[0]
            return (args[tgt[1]] if tgt[0] == "pos" else kwargs[tgt[1]]) if tgt else _adopt(res, index)
        out = []
        for i, r in enumerate(res):
            tgt = ra[i] if i < len(ra) else None
            if tgt is not None:
                out.append(args[tgt[1]] if tgt[0] == "pos" else kwargs[tgt[1]])
            else:
                out.append(_new_out(r, index))
        return tuple(out)
    if plan.cpu_results and isinstance(res, tuple):
        return tuple(r if i in plan.cpu_results else _new_out(r, index) for i, r in enumerate(res))
    return _new_out(res, index)


def _new_out(r, index):
    if isinstance(r, _Tensor):
        if r.device.type == "cpu":
            return _adopt(r, index)
        return r
    if isinstance(r, (list, tuple)):
        vals = [_new_out(e, index) for e in r]
        return tuple(vals) if isinstance(r, tuple) else vals
    return r


_host_for = _memory.host_for
_hosts = _memory._hosts
_hosts_get = _hosts.get


def _host_arg(a, index, write: bool):
    """Host form of tensor argument ``a`` and the call's device index so far: CPU tensors only as
    0-dim values, one npu device per call, and, unless ``write`` (the kernel writes or may resize
    it), the allocation's own host tensor when it covers exactly ``a`` (no retag)."""
    if a.is_cpu:
        if a.dim() != 0:
            raise mixed_device_error(f"npu:{index if index is not None else _state.current_device()}", "cpu")
        return a, index
    idx = a.get_device()
    if index is None:
        index = idx
    elif idx != index:
        raise mixed_device_error(f"npu:{index}", f"npu:{idx}")
    if write or a.is_conj() or a.is_neg():
        return _host_for(a, write), index
    ref = _hosts_get(a.data_ptr())  # _memory.host_for_read, inlined
    h = ref() if ref is not None else None
    if h is not None and h.dtype == a.dtype and h.shape == a.shape and h.stride() == a.stride():
        return h, index
    return _memory._retag(a, _KDL_CPU, 0), index


def _call_with_kwargs(plan: Plan, cargs: list, kwargs: dict, index):
    """Convert ``kwargs``, settle the device index and run the CPU kernel; returns ``(res, index)``."""
    if kwargs:
        conv = _Conv()
        conv.index = index
        tkw = plan.tensor_kw
        kwargs = {k: _convert(v, conv, k in tkw, False) for k, v in kwargs.items()}
        if conv.aliases:
            _check_cpu_mix(conv)
        index = conv.index
    if index is None:
        index = _state.current_device()
    return plan.call(*cargs, **kwargs), index


def use_native(module) -> None:
    """Convert arguments through the simulator's C++ part (``module``, loaded by ``_cext``): the
    same steps as :func:`_host_arg`, without Python bytecode; any argument those give up on goes
    through the Python path, which stays the reference. (``_memory.use_native`` does the retag.)"""
    global _host_args
    _host_args = module.host_args


_host_args = None  # the C++ part's host_args once use_native() ran
_GIVE_UP = object()
_NO_POSITIONS = frozenset()


def _fast(plan: Plan, args: tuple, kwargs: dict):
    """The generic path for ``plan.simple`` ops (elementwise, matmul, reductions...)."""
    if _host_args is not None:
        converted = _host_args(args, plan.tensor_pos, plan.written_pos, _hosts)
        if converted is not None:
            res, index = _call_with_kwargs(plan, converted[0], kwargs, converted[1])
            return _adopt(res, index) if res.is_cpu else res
    index = None
    cargs = list(args)
    tpos = plan.tensor_pos
    written = plan.written_pos
    for i, a in enumerate(args):
        if isinstance(a, _Tensor):
            cargs[i], index = _host_arg(a, index, i in written)
        elif i in tpos and isinstance(a, (int, float, bool, complex)):
            cargs[i] = _host.tensor(a)  # a Python number arrived in a Tensor position (docs/simulator_pitfalls.md, pitfall 3)
    res, index = _call_with_kwargs(plan, cargs, kwargs, index)
    if res.is_cpu:
        return _adopt(res, index)
    return res


_SELF = frozenset({0})


def _aliases_self(self, args: tuple) -> bool:
    """Whether an npu argument after ``self`` shares ``self``'s storage."""
    ptr = self.untyped_storage().data_ptr()
    for a in args[1:]:
        if isinstance(a, _Tensor) and not a.is_cpu and a.untyped_storage().data_ptr() == ptr:
            return True
    return False


def _fast_inplace(plan: Plan, self, args: tuple, kwargs: dict):
    """The generic path for ``plan.inplace`` ops on an npu ``self``; None (nothing done) when
    another npu argument shares ``self``'s storage: :func:`run`'s general path then lets the CPU
    kernel see the aliasing."""
    if _host_args is not None and not kwargs and plan.gen_pos is None and plan.gen_kw is None:
        converted = _host_args(args, plan.tensor_pos, _SELF if plan.may_resize else _NO_POSITIONS, _hosts)
        if converted is not None:
            if len(args) > 1 and _aliases_self(self, args):
                return None
            plan.call(*converted[0])
            return self
    cargs = list(args)
    # the allocation's own host tensor unless the kernel may resize self (resize_as_)
    cargs[0], index = _host_arg(self, None, plan.may_resize)
    if len(args) > 1 and _aliases_self(self, args):
        return None
    tpos = plan.tensor_pos
    for i in range(1, len(args)):
        a = args[i]
        if isinstance(a, _Tensor):
            cargs[i], index = _host_arg(a, index, False)
        elif i in tpos and isinstance(a, (int, float, bool, complex)):
            cargs[i] = _host.tensor(a)
    gen_pos, gen_kw = plan.gen_pos, plan.gen_kw
    if gen_pos is not None:
        if gen_pos < len(cargs):
            cargs[gen_pos] = _rng.op_generator(cargs[gen_pos], index, plan.op._schema.name, self)
        else:
            gen_kw = plan.op._schema.arguments[gen_pos].name
    if kwargs or gen_kw is not None:
        ckwargs = {}
        for k, v in kwargs.items():
            if isinstance(v, _Tensor):
                if not v.is_cpu and v.untyped_storage().data_ptr() == self.untyped_storage().data_ptr():
                    return None
                v, index = _host_arg(v, index, False)
            elif k in plan.tensor_kw and isinstance(v, (int, float, bool, complex)):
                v = _host.tensor(v)
            ckwargs[k] = v
        if gen_kw is not None:
            ckwargs[gen_kw] = _rng.op_generator(kwargs.get(gen_kw), index, plan.op._schema.name, self)
        plan.call(*cargs, **ckwargs)
    else:
        plan.call(*cargs)
    return self


def _fast_lists(plan: Plan, args: tuple, kwargs: dict):
    """The generic path for ``plan.lists`` ops (the ``_foreach_*`` family).

    In-place forms never resize their arguments, so written lists get the allocations' own host
    tensors too (``write=False``)."""
    if _host_args is not None:
        res = _fast_lists_native(plan, args, kwargs)
        if res is not _GIVE_UP:
            return res
    index = None
    cargs = list(args)
    tpos = plan.tensor_pos
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            if a and isinstance(a[0], _Tensor):
                hosts = []
                for t in a:
                    if isinstance(t, _Tensor):
                        t, index = _host_arg(t, index, False)
                    hosts.append(t)
                cargs[i] = hosts
        elif isinstance(a, _Tensor):
            cargs[i], index = _host_arg(a, index, False)
        elif i in tpos and isinstance(a, (int, float, bool, complex)):
            cargs[i] = _host.tensor(a)
    res, index = _call_with_kwargs(plan, cargs, kwargs, index)
    return None if res is None else _new_out(res, index)


def _fast_lists_native(plan: Plan, args: tuple, kwargs: dict):
    """:func:`_fast_lists` through the C++ part; ``_GIVE_UP`` when an argument needs the Python path."""
    converted = _host_args(args, plan.tensor_pos, _NO_POSITIONS, _hosts)
    if converted is None:
        return _GIVE_UP
    cargs, index = converted
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], _Tensor):
            hosts = _host_args(a, _NO_POSITIONS, _NO_POSITIONS, _hosts)
            if hosts is None:
                return _GIVE_UP
            if hosts[1] is not None:
                if index is None:
                    index = hosts[1]
                elif hosts[1] != index:
                    return _GIVE_UP
            cargs[i] = hosts[0]
    res, index = _call_with_kwargs(plan, cargs, kwargs, index)
    return None if res is None else _new_out(res, index)


def run(plan: Plan, args: tuple, kwargs: dict):
    """Execute one op call on the simulated device (the generic path)."""
    kind = plan.kind
    if kind == "view":
        return plan.redispatch(_CPU_KS, *args, **kwargs)
    if kind == "special":
        return plan.special(plan.op, *args, **kwargs)
    if plan.dtype_check is not None:
        plan.dtype_check(args, kwargs)
    if plan.fallback is not None:
        _fallback.hit(plan.fallback)
    if plan.simple:
        return _fast(plan, args, kwargs)
    if plan.lists:
        return _fast_lists(plan, args, kwargs)
    if plan.inplace:
        self = args[0] if args else None
        if isinstance(self, _Tensor) and self.device.type == _NPU:
            res = _fast_inplace(plan, self, args, kwargs)
            if res is not None:
                return res
    conv = _Conv()
    allow = plan.allow_cpu_list
    tpos = plan.tensor_pos
    written = plan.written_pos
    cpu_pos = plan.cpu_pos
    cargs = [_convert(a, conv, i in tpos, (allow and isinstance(a, (list, tuple))) or i in cpu_pos, i in written)
             for i, a in enumerate(args)]
    out_kws = plan.out_kws
    if out_kws:
        _check_out_devices(out_kws, kwargs, conv)
    if kwargs:
        tkw = plan.tensor_kw
        ckwargs = {k: _convert(v, conv, k in tkw, False) for k, v in kwargs.items()}
    else:
        ckwargs = kwargs
    if conv.aliases:
        _check_cpu_mix(conv)
    index = conv.index
    if index is None:
        index = _state.current_device()
    if plan.writes:
        _share_aliased_storages(args, kwargs, cargs, ckwargs)
    starts = _out_offsets(out_kws, kwargs, ckwargs) if out_kws else None
    if plan.gen_pos is not None and plan.gen_pos < len(cargs):
        cargs[plan.gen_pos] = _rng.op_generator(cargs[plan.gen_pos], index, plan.op._schema.name,
                                                _random_target(args, kwargs, out_kws))
    elif plan.gen_kw is not None:
        ckwargs[plan.gen_kw] = _rng.op_generator(ckwargs.get(plan.gen_kw), index, plan.op._schema.name,
                                                 _random_target(args, kwargs, out_kws))
    try:
        if plan.seeded_no_gen:
            res = _rng.run_with_device_state(lambda: plan.call(*cargs, **ckwargs), index, plan.op._schema.name,
                                             _random_target(args, kwargs, out_kws))
        else:
            res = plan.call(*cargs, **ckwargs)
    except RuntimeError as exc:
        if _NOT_RESIZABLE not in str(exc) or not out_kws:
            raise
        return _retry_out(plan, args, kwargs, cargs, ckwargs, index)
    if out_kws:
        _sync_out_geometry(out_kws, kwargs, ckwargs, starts)
    return _wrap_out(res, index, plan, args, kwargs)


def _random_target(args, kwargs, out_kws):
    """The tensor a random kernel fills (its offset increment depends on it): the ``out=`` tensor,
    else the first tensor argument (``self`` of in-place ops, the input of dropout/bernoulli)."""
    for k in out_kws or ():
        if isinstance(kwargs.get(k), _Tensor):
            return kwargs[k]
    return next((a for a in args if isinstance(a, _Tensor)), None)


def _share_aliased_storages(args, kwargs, cargs, ckwargs):
    """For an op that writes an argument: npu arguments that are views of one device storage get
    host aliases on one host storage (``_memory.shared_host_aliases``), so the CPU kernel's own
    overlap checks raise torch's "unsupported operation: some elements of the input tensor and the
    written-to tensor refer to a single memory location" as on CPU/CUDA (and torch_npu, whose
    kernels run ``CheckMemoryOverLaps``)."""
    slots = []  # (container, key, device tensor)
    for i, a in enumerate(args):
        if isinstance(a, _Tensor):
            slots.append((cargs, i, a))
        elif isinstance(a, (list, tuple)) and isinstance(cargs[i], list):
            slots.extend((cargs[i], j, t) for j, t in enumerate(a) if isinstance(t, _Tensor))
    for k, v in kwargs.items():
        if isinstance(v, _Tensor):
            slots.append((ckwargs, k, v))
    if len(slots) < 2:
        return
    groups: dict = {}
    for slot in slots:
        t = slot[2]
        if t.device.type == _NPU:
            groups.setdefault(t.untyped_storage().data_ptr(), []).append(slot)
    for group in groups.values():
        if len(group) > 1 and group[0][2].untyped_storage().nbytes():
            for (container, key, _), host in zip(group, _memory.shared_host_aliases([g[2] for g in group])):
                container[key] = host


def out_device_error(device) -> RuntimeError:
    """torch_npu's refusal of an ``out=`` tensor that is not on the NPU (``OpPreparation::check_tensor``,
    OPS_ERROR(ErrCode::PARAM))."""
    from ascend_compat.simulator import _error_code

    return RuntimeError(f"output with device {device} doesn't match the desired device NPU"
                        + _error_code.cpp_error("OPS", "PARAM"))


def _check_out_devices(out_kws, kwargs, conv: _Conv):
    """Refuse a CPU ``out=`` tensor (any dim: the 0-dim exemption is for inputs) once an npu input
    is known; the inputs were converted before, so ``conv.index`` says whether there is one."""
    if conv.index is None:
        return
    for k in out_kws:
        v = kwargs.get(k)
        for t in ((v,) if isinstance(v, _Tensor) else (v or ())):
            if isinstance(t, _Tensor) and t.is_cpu:
                raise out_device_error(t.device)


def _out_hosts(out_kws, kwargs, ckwargs):
    """``(device tensor, host alias)`` for every ``out=`` tensor of a call."""
    for k in out_kws:
        dev, host = kwargs.get(k), ckwargs.get(k)
        yield from (((dev, host),) if isinstance(dev, _Tensor) else zip(dev or (), host or ()))


def _out_offsets(out_kws, kwargs, ckwargs) -> list:
    """The storage offsets of the ``out=`` host aliases before the kernel runs: 0 for a retag (it
    starts at the tensor's first element), the device offset for an alias on the shared host
    storage of :func:`_share_aliased_storages` (an ``out=`` view of an input's storage)."""
    return [h.storage_offset() if isinstance(h, _Tensor) else 0
            for _, h in _out_hosts(out_kws, kwargs, ckwargs)]


def _sync_out_geometry(out_kws, kwargs, ckwargs, starts):
    """Give each npu ``out=`` tensor the geometry the CPU kernel gave its host alias (torch's
    ``resize_output`` and the structured kernels' restriding happen on the alias); the alias's
    offset moved by the kernel is relative to its offset before the call (``starts``)."""
    for (d, h), start in zip(_out_hosts(out_kws, kwargs, ckwargs), starts):
        if (isinstance(d, _Tensor) and d.device.type == _NPU and isinstance(h, _Tensor)
                and (h.shape != d.shape or h.stride() != d.stride() or h.storage_offset() != start)):
            _memory.restride(d, h.shape, h.stride(), d.storage_offset() + h.storage_offset() - start)


def _retry_out(plan: Plan, args, kwargs, cargs, ckwargs, index):
    """Re-run an ``out=`` op into fresh CPU outputs, then resize and fill the device outputs."""
    fresh = {}
    for k in plan.out_kws:
        v = kwargs[k]
        if isinstance(v, _Tensor):
            fresh[k] = _host.empty(0, dtype=v.dtype)
        else:
            fresh[k] = [_host.empty(0, dtype=e.dtype) for e in v]
    ckwargs = dict(ckwargs, **fresh)
    plan.call(*cargs, **ckwargs)
    for k in plan.out_kws:
        dst, src = kwargs[k], fresh[k]
        pairs = [(dst, src)] if isinstance(dst, _Tensor) else list(zip(dst, src))
        for d, s in pairs:
            if d.device.type == _NPU:
                _memory.restride(d, s.shape, s.stride(), d.storage_offset())
                _memory._retag(d, _KDL_CPU, 0).copy_(s)
            else:
                d.resize_(s.shape).copy_(s)
    outs = [kwargs[k] for k in plan.out_kws]
    return outs[0] if len(outs) == 1 else tuple(outs)


def call_on_host(op, args, kwargs=None, index: Optional[int] = None):
    """Run ``op`` on host aliases of ``args`` and adopt new tensor outputs onto the device.

    Used by special kernels (convolution, fused RNN cells) whose CPU computation is another op.
    """
    conv = _Conv()
    cargs = [_convert(a, conv, False, False) for a in args]
    ckw = {k: _convert(v, conv, False, False) for k, v in (kwargs or {}).items()}
    _check_cpu_mix(conv)
    idx = conv.index if conv.index is not None else (index if index is not None else _state.current_device())
    return _new_out(op(*cargs, **ckw), idx)


def boxed_fallback(op, *args, **kwargs):
    """The PrivateUse1 backend fallback kernel registered with ``Library("_", "IMPL").fallback``."""
    plan = _plan.cached((op, "plain"))
    if plan is None:
        plan = plan_for(op)
    if plan.fast_inplace and args and isinstance(args[0], _Tensor) and args[0].device.type == _NPU:
        res = _fast_inplace(plan, args[0], args, kwargs)  # normal_, uniform_, zero_, fill_ (randn, zeros)
        if res is not None:
            return res
    return run(plan, args, kwargs)


_NORMAL_ = torch.ops.aten.normal_.default


@functools.lru_cache(maxsize=1)
def _normal_dtype_check():
    return _dtype_support.op_check(_NORMAL_)


def normal_kernel(self, mean=0.0, std=1.0, *, generator=None):
    """``normal_``'s PrivateUse1 kernel (``randn`` is ``empty`` + ``normal_``): :func:`_fast_inplace`
    for its one tensor, without the boxed fallback's plan lookup and argument loops. Same host
    tensor, same CPU kernel, same generator (the device's unless one is given), so the same stream.
    When the emulated torch_npu version has no native ``normal_`` it is the boxed fallback."""
    if "normal_" not in _fallback.native_set():
        return boxed_fallback(_NORMAL_, self, mean, std, generator=generator)
    dtype_check = _normal_dtype_check()
    if dtype_check is not None:  # torch_npu's recorded gap (aclnnInplaceNormal: no complex32)
        dtype_check((self,), {})
    converted = _host_args((self,), _NO_POSITIONS, _NO_POSITIONS, _hosts) if _host_args is not None else None
    if converted is not None:
        (host,), index = converted
    else:
        host, index = _host_arg(self, None, False)
    host.normal_(mean, std, generator=_rng.op_generator(generator, index, "normal_", self))
    return self


def direct_kernel(op, mode: str = "plain"):
    """A per-op kernel for ``Library("aten", "IMPL").impl`` (skips the boxed-fallback lookup).

    The plan is built on the first call (keeps ``install()`` fast: most ops are never called).
    """
    plan = None

    def kernel(*args, **kwargs):
        nonlocal plan
        if plan is None or plan.epoch != _plan.current_epoch:
            plan = plan_for(op, mode)
        if plan.fast:
            return _fast(plan, args, kwargs)  # one Python frame less on the hot path
        if plan.fast_lists:
            return _fast_lists(plan, args, kwargs)
        return run(plan, args, kwargs)

    kernel.__name__ = f"npu_sim_{op._schema.name.split('::')[-1]}"
    return kernel

