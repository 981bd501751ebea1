"""One planned rank, in a process of its own: ``python -m ascend_compat.plan._worker SPEC.json OUT.json``.

Installs the simulated NPU (the rank's node: ``min(world, 8)`` devices, rank r on ``npu:r % 8``), the
runtime shim, a fake process group of the script's world size for ``init_process_group`` (collectives
move no data and are recorded), then runs the unmodified script under storage-less tensors
(:mod:`._fake`) with the recorder (:mod:`._record`) until it has made ``steps`` optimizer steps or
ends. Writes the rank's result (:func:`analyse`) as JSON; the exit status says how it went (0 ran,
1 the script failed, 3 it never used the device).
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback

NODE = 8


class _Stop(BaseException):
    """Raised from the optimizer-step hook once enough steps are planned (not an Exception, so the
    script's own ``except Exception`` blocks let it through)."""


def _prepare_environment(spec: dict) -> None:
    rank, world = spec["rank"], spec["world"]
    local_world = min(world, NODE)
    os.environ.update({
        "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank % NODE),
        "LOCAL_WORLD_SIZE": str(local_world), "GROUP_RANK": str(rank // NODE),
        "MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"), "MASTER_PORT": os.environ.get("MASTER_PORT", "29500"),
        "ASCEND_COMPAT_SIMULATE": "1", "ASCEND_COMPAT_SIM_DEVICES": str(local_world),
        "ASCEND_COMPAT_SIM_SOC": spec["soc"], "ASCEND_COMPAT_NO_INHERIT": "1",
    })
    if world == 1:
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"):
            os.environ.pop(k, None)


def _fake_process_groups(world: int, rank: int) -> None:
    """``init_process_group`` (any backend, any init method) makes a fake group of the script's world
    size on a fake store; ``deepspeed.comm`` and accelerate reach it through torch."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore, _create_fake_pg

    if "plannpu" not in dist.Backend.backend_list:
        dist.Backend.register_backend("plannpu", _create_fake_pg, extended_api=True, devices=["cpu", "npu"])
    original = dist.init_process_group

    def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                           group_name="", pg_options=None, device_id=None, **kwargs):
        args = dict(backend="plannpu", store=FakeStore(), world_size=world, rank=int(os.environ.get("RANK", rank)))
        if timeout is not None:
            args["timeout"] = timeout
        return original(**args)

    dist.init_process_group = init_process_group
    import torch.distributed.distributed_c10d as c10d
    import torch.distributed.utils as dist_utils

    c10d.init_process_group = init_process_group
    # DDP's start-up checks read parameter data across ranks in C++ (storage-less tensors have none); in a
    # world of identical fake ranks they would pass, so they are skipped
    import torch.nn.parallel.distributed as ddp

    for mod in (dist_utils, ddp):
        if hasattr(mod, "_verify_param_shape_across_processes"):
            mod._verify_param_shape_across_processes = lambda *a, **k: None
        if hasattr(mod, "_sync_module_states"):
            mod._sync_module_states = lambda *a, **k: None
    dist._broadcast_coalesced = lambda *a, **k: None
    # the fake group's work completes with no value, which DDP's reducer rejects: its default all-reduce
    # as a comm hook (the same in-place division and all_reduce, recorded) that completes with the bucket
    init = ddp.DistributedDataParallel.__init__

    def ddp_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if not getattr(self, "_comm_hooks", None) and getattr(self, "reducer", None) is not None:
            self.register_comm_hook(self.process_group, _allreduce_hook)

    ddp.DistributedDataParallel.__init__ = ddp_init
    from ascend_compat.cuda_shim import _import_hooks

    _import_hooks.watch(["deepspeed.runtime.zero.utils"], _deepspeed_checks)


def _deepspeed_checks(name: str) -> None:
    """DeepSpeed ZeRO-3 compares list lengths across ranks by reading a broadcast value; a fake group
    broadcasts nothing, and identical fake ranks agree by construction."""
    module = sys.modules[name]
    for fn in ("assert_lst_len_same_as_other_ranks", "assert_ints_same_as_other_ranks"):
        if hasattr(module, fn):
            setattr(module, fn, lambda *a, **k: None)


def _allreduce_hook(group, bucket):
    import torch
    import torch.distributed as dist

    buf = bucket.buffer()
    buf.div_(group.size() if group is not None else dist.get_world_size())
    dist.all_reduce(buf, group=group, async_op=True)  # as the reducer's own: the backward goes on
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


def run(spec: dict) -> dict:
    _prepare_environment(spec)
    import torch  # noqa: F401  (after the environment: the simulator reads it)

    from ascend_compat import _activation

    _activation.activate("simulator")
    # FakeTensors give "npu" without an index the current device only once the device is initialised
    # (the first real allocation does that; a plan makes none)
    torch.npu._lazy_init()
    if spec["world"] > 1:
        _fake_process_groups(spec["world"], spec["rank"])
    from ascend_compat.plan import _analyse, _fake, _hooks
    from ascend_compat.plan._record import Recorder

    target, module = spec["target"], spec.get("module")
    roots = [os.getcwd()] if module else [os.path.dirname(os.path.abspath(target[0]))]
    local = spec["rank"] % NODE
    status, error = "ok", None
    started = time.perf_counter()
    with _fake.enter() as fake_mode:
        rec = Recorder(local, roots, fake_mode)
        with rec, _hooks.installed(rec, spec["steps"], _Stop, spec.get("progress", False)):
            try:
                _run_target(module, target)
            except _Stop:
                pass
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    status, error = "failed", f"the script exited with status {exc.code}"
            except BaseException as exc:  # the script's own failure: reported, not ours
                status, error = "failed", _describe(exc)
    result = _analyse.analyse(rec, spec)
    result.update(status=status, error=error, wall_s=round(time.perf_counter() - started, 2))
    if status == "ok" and not rec.allocs:
        result["status"] = "unused"
    return result


def _run_target(module, target) -> None:
    if module is not None:
        sys.argv = [module, *target]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(target)
        sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
        runpy.run_path(target[0], run_name="__main__")


def _describe(exc: BaseException) -> str:
    """The script's exception with its innermost frames from user code (no ascend-compat frames)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "ascend_compat" not in f.filename and "runpy" not in f.filename]
    where = ""
    if frames:
        f = frames[-1]
        where = f" (at {f.filename}:{f.lineno})"
    return f"{type(exc).__name__}: {exc}{where}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    result = run(spec)
    from ascend_compat._files import write_text_atomic

    write_text_atomic(argv[1], json.dumps(result))
    os._exit({"ok": 0, "failed": 1, "unused": 3}[result["status"]])  # skip teardown of a fake world


if __name__ == "__main__":
    sys.exit(main())
