"""The per-op facts of the simulated NPU's generic kernel: :class:`Plan`, computed once per
``(OpOverload, mode)`` and cached until something it is computed from changes, and the table of
ops with their own kernel (``SPECIAL``). ``_dispatch`` runs ops by these plans."""
from __future__ import annotations

import torch

from ascend_compat.simulator import _dtype_support, _fallback

_TENSOR_TYPES = ("Tensor", "Optional[Tensor]")
_LIST_TYPES = ("List[Tensor]", "List[Optional[Tensor]]")
_INDEX_OPS = frozenset({"index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index",
                        "_unsafe_index_put", "_index_put_impl"})
#: arguments that are CPU tensors by the op's contract, on CUDA and on torch_npu alike (the lengths
#: of a packed sequence): a CPU tensor there is no device mix
_CPU_BY_CONTRACT = {"_pack_padded_sequence": ("lengths",), "_pad_packed_sequence": ("batch_sizes",),
                    "_pack_padded_sequence_backward": ("batch_sizes",)}
#: results that stay on the CPU by contract: op -> result positions (a packed sequence's batch_sizes)
_CPU_RESULTS = {"_pack_padded_sequence": (1,), "_pad_packed_sequence": (1,)}
_EXTRA_VIEWS = frozenset({"aten::_unsafe_view", "aten::set_", "aten::lift_fresh"})

_plans: dict = {}  # (op, mode) -> Plan, for the current epoch
#: bumped (and the cache cleared) whenever something a Plan is computed from changes: the
#: ``SPECIAL`` table (:func:`register_special`) or the native-op table (``_fallback.init``).
#: Kernels holding a plan re-plan when its epoch is stale (read it; only invalidate_plans sets it).
current_epoch = 0


def invalidate_plans() -> None:
    """Forget every plan: the next call of each op plans again from the current state."""
    global current_epoch
    current_epoch += 1
    _plans.clear()


class Plan:
    """Per-OpOverload facts the generic kernel needs.

    A plan is computed from: the op's schema and tags, ``mode`` (how torch_npu reaches the op,
    see ``_fallback.fallback_name``), the ``SPECIAL`` table, the native-op table of the emulated
    torch_npu version (which ops fall back) and the dtype refusal table (static data). It is
    cached under ``(op, mode)`` for one :data:`current_epoch`; everything else that changes what an op
    does is read per call (the float64 mode by the ``dtype_check``, ``TORCH_NPU_FALLBACK_CPU_DISABLE``
    by ``_fallback.hit``) or replaces the kernel around the plan (``faults``, ``numerics``).
    """

    __slots__ = ("op", "call", "kind", "special", "tensor_pos", "tensor_kw", "returns_alias",
                 "gen_pos", "gen_kw", "seeded_no_gen", "fallback", "allow_cpu_list", "single_tensor_return",
                 "out_kws", "device_kw", "device_pos", "written_pos", "simple", "redispatch", "fast",
                 "lists", "fast_lists", "dtype_check", "cpu_pos", "cpu_results", "writes", "epoch", "mode",
                 "inplace", "may_resize", "fast_inplace")

    def __init__(self, op, mode: str = "plain"):
        self.op = op
        self.mode = mode
        self.epoch = current_epoch
        self.call = op._op
        self.redispatch = op._handle.redispatch_boxed
        schema = op._schema
        name = schema.name
        self.special = special_kernel(op)
        rets = schema.returns
        args = schema.arguments
        if self.special is not None:
            self.kind = "special"
        elif is_view_op(op) or name in _EXTRA_VIEWS:
            self.kind = "view"
        else:
            self.kind = "compute"
        pos_args = [a for a in args if not a.kwarg_only]
        kw_args = [a for a in args if a.kwarg_only]
        self.tensor_pos = frozenset(i for i, a in enumerate(pos_args) if str(a.type) in _TENSOR_TYPES)
        # positional arguments the kernel may write (or resize): they get a retagged alias, never
        # the allocation's resizable host tensor
        self.written_pos = frozenset(i for i, a in enumerate(pos_args)
                                     if a.alias_info is not None and a.alias_info.is_write)
        self.tensor_kw = tuple(a.name for a in kw_args if str(a.type) in _TENSOR_TYPES)
        self.out_kws = tuple(a.name for a in kw_args if a.alias_info is not None and a.alias_info.is_write)
        self.writes = bool(self.written_pos or self.out_kws)
        # return i -> ("pos", j) / ("kw", name) of the argument it aliases (mutable returns)
        alias_of = []
        for r in rets:
            target = None
            if r.alias_info is not None and r.alias_info.is_write:
                for j, a in enumerate(pos_args):
                    if a.alias_info is not None and a.alias_info.before_set == r.alias_info.before_set:
                        target = ("pos", j)
                for a in kw_args:
                    if a.alias_info is not None and a.alias_info.before_set == r.alias_info.before_set:
                        target = ("kw", a.name)
            alias_of.append(target)
        self.returns_alias = tuple(alias_of) if any(t is not None for t in alias_of) else None
        self.single_tensor_return = len(rets) == 1 and str(rets[0].type) == "Tensor"
        self.gen_pos = next((i for i, a in enumerate(pos_args) if "Generator" in str(a.type)), None)
        self.gen_kw = next((a.name for a in kw_args if "Generator" in str(a.type)), None)
        self.seeded_no_gen = (torch.Tag.nondeterministic_seeded in op.tags and self.gen_pos is None
                              and self.gen_kw is None)
        base = name.split("::", 1)[-1]
        self.allow_cpu_list = base in _INDEX_OPS
        cpu_names = _CPU_BY_CONTRACT.get(base, ())
        self.cpu_pos = frozenset(i for i, a in enumerate(pos_args) if a.name in cpu_names)
        self.cpu_results = _CPU_RESULTS.get(base, ())
        self.device_pos = next((i for i, a in enumerate(pos_args) if "Device" in str(a.type)), None)
        self.device_kw = next((a.name for a in kw_args if "Device" in str(a.type)), None)
        self.fallback = None if self.kind != "compute" else _fallback.fallback_name(op, mode)
        # torch_npu's own float64 refusals (sort.stable, max.dim, ...): checked in run()
        self.dtype_check = None if self.kind != "compute" else _dtype_support.op_check(op)
        # the common case: no generator, no device argument, no list arguments, one Tensor result
        self.simple = (self.dtype_check is None and self.gen_pos is None and self.gen_kw is None
                       and not self.seeded_no_gen
                       and self.device_pos is None and self.device_kw is None and not self.allow_cpu_list
                       and not self.cpu_pos
                       and self.returns_alias is None and self.single_tensor_return
                       and not any(str(a.type) in _LIST_TYPES for a in args))
        # what run() would do is exactly _fast(): a compute op without a simulated fallback
        self.fast = self.simple and self.kind == "compute" and self.fallback is None
        # the _foreach_* shape: Tensor-list arguments, no generator/device/index semantics, no
        # mutable returns, and either nothing or one Tensor[] returned; in-place forms never
        # resize their arguments, so written lists may get the allocations' own host tensors
        self.lists = (self.kind == "compute" and name.startswith("aten::_foreach_")
                      and self.gen_pos is None and self.gen_kw is None and not self.seeded_no_gen
                      and self.device_pos is None and self.device_kw is None and not self.out_kws
                      and self.returns_alias is None
                      and (not rets or (len(rets) == 1 and str(rets[0].type) == "List[Tensor]")))
        self.fast_lists = self.lists and self.fallback is None
        # the in-place shape (add_, mul_, zero_, fill_, normal_, uniform_...): writes its first
        # argument only and returns it; no device/list arguments; a generator is allowed
        self.may_resize = "resize" in base
        self.inplace = (self.kind == "compute" and self.dtype_check is None and not self.seeded_no_gen
                        and self.written_pos == frozenset({0}) and not self.out_kws
                        and self.returns_alias == (("pos", 0),) and self.single_tensor_return
                        and self.device_pos is None and self.device_kw is None and not self.allow_cpu_list
                        and not self.cpu_pos and not any(str(a.type) in _LIST_TYPES for a in args))
        self.fast_inplace = self.inplace and self.fallback is None


#: op name (``aten::x`` or ``aten::x.overload``) -> its own kernel; filled through
#: :func:`register_special` by ``_special_ops`` when it loads (it builds on this module, so this
#: module never imports it)
SPECIAL: dict = {}


def register_special(table: dict) -> None:
    """Add ``{"aten::name[.overload]": fn(op, *args, **kwargs)}`` entries to ``SPECIAL`` (plans
    made before are forgotten)."""
    SPECIAL.update(table)
    invalidate_plans()


def special_kernel(op):
    """The ``SPECIAL`` function for ``op`` (its overload's entry first), or None."""
    schema = op._schema
    name = schema.name
    table = SPECIAL
    return (table.get(f"{name}.{schema.overload_name}") if schema.overload_name else None) or table.get(name)


def is_view_op(op) -> bool:
    """True when ``op`` only rewrites metadata: every return a non-writing alias, or ``inplace_view``."""
    rets = op._schema.returns
    return ((bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets))
            or torch.Tag.inplace_view in op.tags)


def plan_for(op, mode: str = "plain") -> Plan:
    """The :class:`Plan` of ``op`` reached as ``mode`` (see ``_fallback.fallback_name``), cached
    under ``(op, mode)`` until :func:`invalidate_plans`."""
    key = (op, mode)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = Plan(op, mode)
    return plan


#: ``cached((op, mode))``: the cached plan, or None (the hot path's lookup, without planning; the
#: cache is cleared in place, never replaced, so this bound method stays valid)
cached = _plans.get


_fallback.on_table_change(invalidate_plans)
