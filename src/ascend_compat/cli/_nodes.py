"""``ascend-compat run --simulate --nodes N``: a multi-node job rehearsed on one machine.

Starts one ``torchrun`` per simulated node (``--nnodes N --node-rank k``, static rendezvous on a local
port, as a cluster's launch script does with ``--master-addr``), each running the script under
``ascend-compat run --simulate`` with the node's devices (``npu:0..D-1`` in every node). Each node keeps
its own logs under ``LOG_DIR/node<k>/``, laid out as on a real node: ``process_log/`` (CANN plogs,
through ``ASCEND_PROCESS_LOG_PATH``), ``torchrun/`` (torchrun's per-rank stdout/stderr) and
``launcher.log`` (torchrun's own output, also shown on the console prefixed with ``[node<k>]``).

The job's environment is passed to every node; ``--node-env FILE`` (once per node, in node order) adds
that node's own ``HCCL_*``, ``ASCEND_*``, ``RANK_TABLE_FILE``, ``TORCH_NPU_*`` and ``PYTORCH_NPU_*``
variables from an ``env`` dump, so a real cluster's per-node settings are rehearsed as they are.
``MASTER_ADDR`` is the local machine (a cluster address would be unreachable here); ``MASTER_PORT``
is kept when set.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from typing import List, Optional, Sequence

#: variables a node's env dump may set for the rehearsal (the rest belong to that machine, not the job)
NODE_PREFIXES = ("HCCL_", "ASCEND_", "RANK_TABLE_FILE", "TORCH_NPU_", "PYTORCH_NPU_", "TASK_QUEUE_ENABLE")
_NOT_FROM_DUMP = ("ASCEND_PROCESS_LOG_PATH", "ASCEND_COMPAT_")
#: launcher variables torchrun sets for each worker: stale values from the calling shell are dropped
_LAUNCHER = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "NODE_RANK",
             "MASTER_ADDR", "TORCHELASTIC_RUN_ID")


def default_log_dir() -> str:
    return os.path.join("ascend-compat-logs", time.strftime("job-%Y%m%d-%H%M%S"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_overrides(dump: dict) -> dict:
    """The variables of a node's env dump that the rehearsal applies to that node."""
    return {k: v for k, v in dump.items() if k.startswith(NODE_PREFIXES) and not k.startswith(_NOT_FROM_DUMP)}


def _pump(stream, prefix: str, console, log_path: str) -> None:
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        for line in iter(stream.readline, ""):
            log.write(line)
            log.flush()
            console.write(prefix + line)
            console.flush()
    stream.close()


def node_command(k: int, nodes: int, nproc: int, port: int, node_dir: str, target: Sequence[str],
                 module: Optional[str]) -> List[str]:
    run = ["-m", "ascend_compat", "run", "--simulate"] + (["-m", module] if module else []) + list(target)
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--node-rank={k}",
            f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1", f"--master-port={port}",
            f"--log-dir={os.path.join(node_dir, 'torchrun')}", "--redirects=3", "--tee=3", *run]


def launch(target: Sequence[str], module: Optional[str], nodes: int, devices: int, nproc: Optional[int],
           log_dir: str, dumps: Sequence[dict]) -> int:
    """Run the job on ``nodes`` simulated nodes; returns 0 when every node succeeded, else the first
    failing node's exit status."""
    from ascend_compat.cli import _console

    base = {k: v for k, v in os.environ.items() if k not in _LAUNCHER}
    port = int(os.environ["MASTER_PORT"]) if os.environ.get("MASTER_PORT", "").isdigit() else free_port()
    if os.environ.get("MASTER_ADDR") not in (None, "", "127.0.0.1", "localhost"):
        _console.message("note", f"MASTER_ADDR={os.environ['MASTER_ADDR']} is replaced by 127.0.0.1: every simulated "
                                 "node runs on this machine", prog="ascend-compat run")
    procs, pumps = [], []
    for k in range(nodes):
        node_dir = os.path.join(log_dir, f"node{k}")
        os.makedirs(node_dir, exist_ok=True)
        env = dict(base)
        env.update(node_overrides(dumps[k]) if k < len(dumps) else {})
        env.update(ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_SIM_DEVICES=str(devices),
                   ASCEND_COMPAT_SIM_NODE=f"node{k}", MASTER_PORT=str(port),
                   ASCEND_PROCESS_LOG_PATH=os.path.abspath(os.path.join(node_dir, "process_log")))
        count = nproc or devices
        proc = subprocess.Popen(node_command(k, nodes, count, port, node_dir, target, module), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
        procs.append(proc)
        launcher_log = os.path.join(node_dir, "launcher.log")
        for stream, console in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            t = threading.Thread(target=_pump, args=(stream, f"[node{k}] ", console, launcher_log), daemon=True)
            t.start()
            pumps.append(t)
    try:
        codes = [p.wait() for p in procs]
    except KeyboardInterrupt:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        raise
    finally:
        for t in pumps:
            t.join(timeout=5)
    failed = [(k, c) for k, c in enumerate(codes) if c != 0]
    status = ", ".join(f"node{k}: exit {c}" for k, c in enumerate(codes))
    _console.message("note", f"{status}; logs in {log_dir}" + (f" (diagnose: ascend-compat error --log {log_dir})"
                                                                 if failed else ""), prog="ascend-compat run")
    return failed[0][1] if failed else 0
