"""The op and allocation recorder of a plan: an op observer (:class:`ascend_compat.observe.OpObserver`)
entered inside ``FakeTensorMode``, so it sees every op before the fake kernel runs it.

For every op it sees (the ops a backend kernel would run; decompositions inside FakeTensorMode stay
invisible, as host temporaries inside the simulator's kernels are) it records:

* each new npu storage among the outputs, as a block of the device's caching allocator (the simulator's
  ``_memory`` allocator, so ``torch.npu.memory_*`` answer inside the plan too), released through a
  weakref on the storage's Python object when the storage dies; ``UntypedStorage.resize_`` (FSDP2's
  unsharded parameters) frees and allocates in place;
* the op's FLOPs (``torch.utils.flop_counter``'s formulas), bytes read and written, dtype, the module
  path and forward/backward/optimizer pass (from the observation layer: the module stack, backward ops
  at their forward call's module) and the script's ``path:line`` (``observe.frames.ScriptFrames``);
* collectives (``c10d``/``_c10d_functional`` ops) with their sizes, group size and whether the compute
  stream goes on while they run (:func:`_issued_async`).

What the layer does not know and the plan adds: storage-less tensors (``.item()`` of one answers the value
a healthy run would see, :mod:`._values`; small host tensors keep real storage), the allocation records,
DTensor's own fake sharding propagation (left out) and the autograd engine's in-place gradient sum (emulated).

Categories (parameters, gradients, optimizer state, activations) are marked on the allocation records
as hooks see the tensors; whatever is left is a temporary or, inside ``torch.distributed``, a
communication buffer.
"""
from __future__ import annotations

import os
import sys
import weakref
from typing import Dict, List, Optional

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils._pytree import tree_leaves

from ascend_compat.observe.frames import ScriptFrames
from ascend_compat.observe.observer import OpCall, OpObserver, in_backward
from ascend_compat.plan._values import StandIns, is_fake

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_COMM_NS = ("c10d", "_c10d_functional", "c10d_functional", "_dtensor")
_DIST_DIR = os.path.join(_TORCH_DIR, "distributed") + os.sep
_MATMUL = ("mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward", "_scaled_mm",
           "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
           "_scaled_dot_product_fused_attention_overrideable", "npu_fusion_attention", "npu_fusion_attention_grad",
           "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
           "_scaled_dot_product_fused_attention_overrideable_backward")


class Alloc:
    """One device allocation: its size, where it was made, and what it turned out to hold."""

    __slots__ = ("id", "nbytes", "block", "op", "module", "site", "phase", "category", "comm", "device")

    def __init__(self, aid, nbytes, op, module, site, phase, comm, device):
        self.id, self.nbytes, self.op, self.module, self.site = aid, nbytes, op, module, site
        self.phase, self.comm, self.device = phase, comm, device
        self.block = None
        self.category: Optional[str] = None


class OpRecord:
    """One op: its FLOPs and bytes, and for a collective its kind, size, group size and whether the compute
    stream goes on while it runs (``overlap``: issued with ``async_op=True``, as a functional collective, or
    on a stream other than the default one)."""

    __slots__ = ("name", "module", "phase", "flops", "bytes", "dtype", "comm", "comm_bytes", "group", "matmul",
                 "overlap")

    def __init__(self, name, module, phase, flops, nbytes, dtype, comm=None, comm_bytes=0, group=1, matmul=False,
                 overlap=False):
        self.name, self.module, self.phase, self.flops, self.bytes = name, module, phase, flops, nbytes
        self.dtype, self.comm, self.comm_bytes, self.group, self.matmul = dtype, comm, comm_bytes, group, matmul
        self.overlap = overlap


class Recorder(OpObserver):
    """Records allocations (``events``: ``(alloc, +1/-1, allocated, reserved, ops so far)``) and ops.

    ``user_roots``: the script's directories (their files are the script's own even inside a
    site-packages tree); ``fake_mode``: the ``FakeTensorMode`` the script runs under."""

    def __init__(self, device_index: int, user_roots: List[str], fake_mode=None):
        super().__init__(modules=True, forward_sites=True)
        self.fake_mode = fake_mode
        from ascend_compat.simulator import _memory

        self.index = device_index
        self.alloc_model = _memory.allocator(device_index)
        self.sites = ScriptFrames(user_roots)
        self.allocs: List[Alloc] = []
        self.events: List[tuple] = []
        self.ops: List[OpRecord] = []
        self.step = 0
        self.step_marks: List[tuple] = []  # (step, len(events), len(ops)) after each optimizer step
        self.phase_override: Optional[str] = None
        self.values = StandIns(_group_size)
        self._by_storage: Dict[int, Alloc] = {}
        self._refs: Dict[int, weakref.ref] = {}
        self.peak_allocated = 0
        self.peak_event = -1
        from torch.utils.flop_counter import flop_registry

        self._flops = flop_registry

    # ---------------------------------------------------------------- context

    def phase(self) -> str:
        """The pass of the running op: ``optimizer`` (inside ``optimizer.step()``), ``backward`` or ``forward``."""
        if self.phase_override:
            return self.phase_override
        return "backward" if in_backward() else "forward"


    @staticmethod
    def _in_distributed(frame) -> bool:
        f = frame
        while f is not None:
            if f.f_code.co_filename.startswith(_DIST_DIR):
                return True
            f = f.f_back
        return False

    # ---------------------------------------------------------------- allocation

    def _new(self, storage, nbytes: int, op: str, frame) -> Alloc:
        a = Alloc(len(self.allocs), nbytes, op, self.module_path(), self.sites.site(frame), self.phase(),
                  op.split("::")[0] in _COMM_NS or self._in_distributed(frame), self.index)
        self.allocs.append(a)
        if nbytes:
            self._malloc(a)
        key = storage._cdata
        self._by_storage[key] = a
        self._refs[key] = weakref.ref(storage, lambda _r, key=key: self._storage_died(key))
        return a

    def _malloc(self, a: Alloc) -> None:
        m = self.alloc_model
        a.block = m.malloc(a.nbytes)
        allocated = m.allocated()
        self.events.append((a, 1, allocated, m.reserved(), len(self.ops)))
        if allocated > self.peak_allocated:
            self.peak_allocated, self.peak_event = allocated, len(self.events) - 1

    def _free(self, a: Alloc) -> None:
        if a.block is None:
            return
        m = self.alloc_model
        m.free(a.block)
        a.block = None
        self.events.append((a, -1, m.allocated(), m.reserved(), len(self.ops)))

    def _storage_died(self, key: int) -> None:
        self._refs.pop(key, None)
        a = self._by_storage.pop(key, None)
        if a is not None:
            self._free(a)

    def track(self, t: torch.Tensor, op: str, frame=None) -> Optional[Alloc]:
        """The allocation record of npu tensor ``t``'s storage (made now if the storage is new); ``frame``:
        where the stack is searched for the script's line (the op's caller; default: the caller's)."""
        if not isinstance(t, torch.Tensor) or t.device.type != "npu" or is_traceable_wrapper_subclass(t):
            return None
        if self.fake_mode is not None and getattr(t, "fake_mode", self.fake_mode) is not self.fake_mode:
            return None  # DTensor's sharding propagation runs ops in a FakeTensorMode of its own...
        if frame is None:
            frame = sys._getframe(1)
        if _in_sharding_propagation(frame):
            return None  # ...or in the active one: shape-only stand-ins a real run never allocates
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return None
        a = self._by_storage.get(st._cdata)  # the StorageImpl: views and re-wrapped storages alike
        if a is not None:
            return a
        return self._new(st, st.nbytes(), op, frame)

    def resized(self, storage, old: int, new: int) -> None:
        """``UntypedStorage.resize_`` of a tracked npu storage: release the old block, take a new one."""
        a = self._by_storage.get(storage._cdata)
        if a is None:
            return
        self._free(a)
        a.nbytes = new
        if new:
            self._malloc(a)

    def _engine_accumulates(self, args, caller) -> bool:
        """The autograd engine summing two gradients (``InputBuffer::accumulate``): on real tensors it adds
        in place into the first when it holds the last reference; FakeTensors, as tensor subclasses, never
        qualify, so the plan emulates the in-place add (:meth:`_steal`) instead of counting a new buffer."""
        if len(args) < 2 or self.phase() != "backward" or not _called_by_engine(caller):
            return False
        a, b = args[0], args[1]
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.device.type == "npu"
                and a.shape == b.shape and a.dtype == b.dtype and a.is_contiguous())

    def _steal(self, old: torch.Tensor, new: torch.Tensor) -> None:
        """``new``'s (untracked) storage takes over ``old``'s block: an in-place accumulation on the device."""
        try:
            src, dst = old.untyped_storage(), new.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        a_old = self._by_storage.get(src._cdata)
        if (a_old is None or a_old.block is None or dst._cdata in self._by_storage or a_old.nbytes != dst.nbytes()
                or a_old.category == "parameters"):
            return
        del self._by_storage[src._cdata]
        self._refs.pop(src._cdata, None)
        key = dst._cdata
        self._by_storage[key] = a_old
        self._refs[key] = weakref.ref(dst, lambda _r, key=key: self._storage_died(key))

    def mark(self, t, category: str, overwrite: bool = False) -> None:
        """Record that tensor ``t`` (a DTensor's local shard included) holds ``category``."""
        local = getattr(t, "_local_tensor", None)
        if local is not None:
            t = local
        if not isinstance(t, torch.Tensor) or t.device.type != "npu":
            return
        a = self.track(t, "<existing>")
        if a is not None and (a.category is None or overwrite):
            a.category = category

    # ---------------------------------------------------------------- ops

    def on_op(self, call: OpCall):
        func, args, kwargs = call.func, call.args, call.kwargs
        if any(is_traceable_wrapper_subclass(t) for t in tree_leaves((args, kwargs))):
            # a DTensor (or another wrapper): its own dispatch runs the ops on the local tensors, which
            # come back through this mode and are recorded there; the wrapper owns no device memory
            return NotImplemented
        if func is torch.ops.aten._local_scalar_dense.default and is_fake(args[0]):
            return self.values.item(args[0])
        if _host_bookkeeping(func, args, kwargs):
            # small host tensors and what is computed from them alone stay real, so their values exist:
            # batch indices and token ids a data loader slices with, DeviceMesh's rank grid, DDP's bucket
            # indices; large host tensors (a model built on the CPU) stay storage-less
            from torch.utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():
                return func(*args, **kwargs)
        if func is _ADD and self._engine_accumulates(args, call.caller):
            out = func(*args, **kwargs)
            self._steal(args[0], out)
        else:
            out = call.run()
        self.values.after(func, args, kwargs, out)
        name = call.name
        ns, _, base = name.partition("::")
        base = base.split(".")[0]
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        for t in outputs:
            self.track(t, name, call.caller)
        if not (inputs or outputs):
            return out
        nbytes = sum(_nbytes(t) for t in inputs) + sum(_nbytes(t) for t in outputs)
        dtype = (outputs or inputs)[0].dtype
        flops = 0
        fn = self._flops.get(func._overloadpacket)
        if fn is not None:
            try:
                flops = int(fn(*_shapes(args), **_shapes(kwargs), out_val=_shapes(out)))
            except Exception:  # a formula that does not take these arguments: count no FLOPs
                flops = 0
        elif base in ("npu_fusion_attention", "npu_fusion_attention_grad"):
            flops = _fusion_attention_flops(args, kwargs, grad=base.endswith("grad"))
        if base in ("npu_fusion_attention", "npu_fusion_attention_grad"):
            dtype = args[0].dtype
        comm, comm_bytes, group, overlap = None, 0, 1, False
        if ns in _COMM_NS and "wait" not in base:
            comm, comm_bytes, group = base.rstrip("_"), _comm_bytes(inputs), _group_size(args, kwargs)
            overlap = ns != "c10d" or _issued_async(call.caller)
        self.ops.append(OpRecord(name, self.module_path(), self.phase(), flops, nbytes, dtype, comm, comm_bytes,
                                 group, base in _MATMUL, overlap))
        return out


_ADD = torch.ops.aten.add.Tensor
_FACTORIES = {torch.ops.aten.empty.memory_format, torch.ops.aten.zeros.default, torch.ops.aten.empty_strided.default,
              torch.ops.aten.full.default, torch.ops.aten.arange.default, torch.ops.aten.arange.start,
              torch.ops.aten.arange.start_step}


def _host_bookkeeping(func, args, kwargs) -> bool:
    """A small host factory, or an op on real host tensors only that does not leave the host."""
    if func in _FACTORIES or func in _RANDOM_FACTORIES:
        return _small_host_factory(args, kwargs)
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "cpu" and not is_fake(t) for t in tensors)
_RANDOM_FACTORIES = {torch.ops.aten.randint.default, torch.ops.aten.randint.low, torch.ops.aten.randperm.default,
                     torch.ops.aten.scalar_tensor.default, torch.ops.aten.ones.default, torch.ops.aten.rand.default,
                     torch.ops.aten.randn.default, torch.ops.aten.full.default}


def _small_host_factory(args, kwargs) -> bool:
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    if args and not isinstance(args[0], (list, tuple)) and not isinstance(args[0], int):
        return True  # scalar_tensor
    size = kwargs.get("size", args[-1] if args and isinstance(args[-1], (list, tuple)) else (args[0] if args else ()))
    if not isinstance(size, (list, tuple)):  # arange's end
        return isinstance(size, int) and size <= 1 << 16
    n = 1
    for d in size:
        n *= int(d)
    return n <= 1 << 16


_WRAPPERS = (os.path.join(_TORCH_DIR, "_dynamo") + os.sep, os.path.join(_TORCH_DIR, "_compile.py"),
             os.path.join(_TORCH_DIR, "utils", "_device.py"), os.path.join(_OWN_DIR, "cuda_shim") + os.sep,
             os.path.join(_OWN_DIR, "simulator") + os.sep)


def _called_by_engine(f) -> bool:
    """True when the innermost Python frames are the autograd engine's entry (and decorators around it),
    not a Python backward of a custom Function or a hook."""
    for _ in range(8):
        if f is None:
            return True  # the engine's own worker thread
        code = f.f_code
        if code.co_name in ("_engine_run_backward", "run_backward"):
            return True
        if not code.co_filename.startswith(_WRAPPERS):
            return False
        f = f.f_back
    return False


_SHARDING_PROP = os.path.join(_TORCH_DIR, "distributed", "tensor", "_sharding_prop.py")
_DTENSOR_DIR = os.path.join(_TORCH_DIR, "distributed", "tensor") + os.sep


def _in_sharding_propagation(f) -> bool:
    """A frame of DTensor's sharding propagation is on the stack (looked for only inside DTensor code)."""
    g, depth, inside = f, 0, False
    while g is not None and depth < 40:
        name = g.f_code.co_filename
        if name == _SHARDING_PROP:
            return True
        inside = inside or name.startswith(_DTENSOR_DIR)
        if depth == 12 and not inside:
            return False
        g, depth = g.f_back, depth + 1
    return False


def _nbytes(t: torch.Tensor) -> int:
    try:
        return t.numel() * t.element_size()
    except (RuntimeError, NotImplementedError):
        return 0


def _shapes(x):
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.shape if isinstance(v, torch.Tensor) else v, x)


def _comm_bytes(inputs) -> int:
    return max((_nbytes(t) for t in inputs), default=0)


_C10D_API = os.path.join(_TORCH_DIR, "distributed", "distributed_c10d.py")


def _issued_async(frame) -> bool:
    """A c10d collective the compute stream need not wait for: called with ``async_op=True`` (DDP's
    reducer, FSDP2) or inside ``with torch.npu.stream(side)`` (DeepSpeed's ``overlap_comm``, FSDP2's
    streams)."""
    f, depth = frame, 0
    while f is not None and depth < 12:
        if f.f_code.co_filename == _C10D_API and f.f_locals.get("async_op"):
            return True
        f, depth = f.f_back, depth + 1
    npu = getattr(torch, "npu", None)
    if npu is None:
        return False
    try:
        return npu.current_stream() != npu.default_stream()
    except Exception:  # no device context: the default stream
        return False


def _group_size(args, kwargs) -> int:
    for v in list(args) + list(kwargs.values()):
        size = getattr(v, "size", None)
        if callable(size) and type(v).__name__ in ("ProcessGroup", "FakeProcessGroup"):
            try:
                return int(size())
            except Exception:
                return 1
        if isinstance(v, int) and not isinstance(v, bool) and 1 < v <= 65536 and False:
            return v
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size()
    except Exception:
        pass
    return 1


def _fusion_attention_flops(args, kwargs, grad: bool) -> int:
    """4·B·N·Sq·Skv·D for the forward (QKᵀ and PV), 2.5x that for the backward; BNSD/BSND/BSH/SBH."""
    q, k = args[0], args[1]
    pos = 5 if grad else 4
    if q.dim() == 4 and k.dim() == 4:
        layout = str(args[pos] if len(args) > pos else kwargs.get("input_layout", "BNSD")).upper()
        if layout == "BSND":
            b, sq, n, d = q.shape
            skv = k.shape[1]
        else:
            b, n, sq, d = q.shape
            skv = k.shape[2]
        f = 4 * b * n * sq * skv * d
    else:
        f = 4 * q.numel() * (k.shape[0] if k.dim() == 3 else 1)
    return int(f * 2.5) if grad else f
