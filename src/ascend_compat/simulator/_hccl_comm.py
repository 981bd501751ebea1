"""The simulated HCCL communicator behind each hccl process group: what a real job's environment does to it,
and how its collectives fail.

* **Creation** (at the first collective, when torch_npu creates the HCCL communicator): the job's
  environment is read once (:mod:`ascend_compat.knowledge.hccl_env`) and refused as torch_npu/HCCL refuse
  it (``HCCL_BUFFSIZE`` <= 0: torch_npu's "HCCL_BUFFSIZE should be positive."; an invalid
  ``HCCL_CONNECT_TIMEOUT`` or ``HCCL_IF_IP``: EI0001; a usable ``RANK_TABLE_FILE`` that is invalid or does
  not match the job: EI0004), torch_npu's warnings are given, and HCCL's run-log lines are written.
* **Each collective** gets a sequence number; the ranks first exchange what they are about to run (op,
  element count, dtype) and compare it with their ring neighbours, as HCCL's consistency check does:
  a difference raises EI0005 on the ranks that see it. Then the data moves (gloo on host memory).
* **Time limit**: a collective that has not completed after ``HCCL_EXEC_TIMEOUT`` seconds (counted from its
  start; a dead peer does not shorten the wait, as on HCCL) fails with torch_npu's error 507048 and HCCL's
  EI0002 text, naming the peers that are lost or stuck (:mod:`._hccl_heartbeat`), after writing HCCL's
  task-exception lines to the plog. ``HCCL_EXEC_TIMEOUT=0``, or one above the process group's timeout,
  leaves the limit to the process group's timeout and torch_npu's watchdog message.

Differences from HCCL: every collective is checked (HCCL checks when it builds the links of an op, so on
hardware a later mismatch may only show as EI0002); point-to-point send/recv keep gloo's own timeout.
"""
from __future__ import annotations

import os
import socket
import threading
import time
import warnings
from datetime import timedelta
from typing import Callable, Optional

from ascend_compat.errors import hccl_text, torch_npu_text
from ascend_compat.knowledge import hccl_env, rank_table
from ascend_compat.simulator import _error_code, _hccl_heartbeat, _host, _plog

_OPCODES = {name: i for i, name in enumerate(hccl_text.OPS, start=1)}
#: ops whose element count HCCL requires to be equal on every rank
_COUNTED = ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "gather", "scatter")
_warned: set = set()


def node_address(env=None) -> str:
    """This node's address in HCCL's logs: ``HCCL_IF_IP``, else the simulated node's name, else the host name."""
    env = os.environ if env is None else env
    return env.get("HCCL_IF_IP") or env.get("ASCEND_COMPAT_SIM_NODE") or socket.gethostname()


def _warn_once(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        warnings.warn(text, UserWarning, stacklevel=4)


class Communicator:
    """One process group's HCCL state on this rank (see the module doc)."""

    def __init__(self, store, rank: int, size: int, pg_timeout: timedelta, gloo, world: bool = True) -> None:
        self.store, self.rank, self.size, self.gloo = store, rank, size, gloo
        self.world = world  # the default group: the one torch_npu builds from a rank table
        self.env = hccl_env.read()
        pg = pg_timeout.total_seconds()
        exec_timeout = self.env.exec_timeout
        self.watchdog = not exec_timeout or exec_timeout > pg  # torch_npu's watchdog fires first
        self.limit = pg if self.watchdog else float(exec_timeout)
        if not self.watchdog:  # gloo's own wait ends just after HCCL's: a timed-out op never pins the process at exit
            gloo.set_timeout(timedelta(seconds=self.limit + 2))
        self.seq = 0
        self.inside = False
        self.created = False
        self.device = 0
        self._deadline: Optional[float] = None
        self._op = ""
        self._start = 0.0
        self.identifier = self._identifier(pg)

    # ------------------------------------------------------------------ identity and heartbeat
    def _identifier(self, pg_timeout: float) -> str:
        """HCCL's communicator identifier (``<ip>%<nic>_<port>_<device>_<microseconds>``), made by rank 0."""
        if self.rank == 0:
            ident = f"{node_address()}%{self.env.socket_ifname or 'sim'}_{self.env.master_port or 60000}_0_" \
                    f"{int(time.time() * 1e6)}"
            self.store.set("identifier", ident)
            return ident
        self.store.wait(["identifier"], timedelta(seconds=pg_timeout))
        return self.store.get("identifier").decode()

    @property
    def location(self) -> str:
        return f"{node_address()}/{self.device}"

    def publish(self) -> None:
        """One heartbeat (called by the heartbeat thread)."""
        try:
            self.store.set(f"hb/{self.rank}", f"{time.time():.3f} {self.seq} {'in' if self.inside else 'out'} "
                                              f"{self.location}")
        except Exception:  # the store's host is gone: stay quiet, as HCCL's own links would
            pass

    # ------------------------------------------------------------------ creation
    def _create(self) -> None:
        """torch_npu creates the HCCL communicator at the first collective: check the environment then."""
        from ascend_compat.simulator import _state

        self.device = _state.current_device()
        for problem in self.env.problems:
            if problem.severity == hccl_env.WARNING and problem.variable in ("HCCL_EXEC_TIMEOUT", "HCCL_EVENT_TIMEOUT",
                                                                            "HCCL_CONNECT_TIMEOUT"):
                _warn_once(problem.message)
        for problem in self.env.errors():
            self._refuse_environment(problem)
        if self.env.rank_table_file and self.world:  # sub-groups are split from the global communicator
            self._check_rank_table(self.env.rank_table_file)
        self.created = True
        writer = _plog.writer()
        server = f"{node_address()}%{self.env.socket_ifname or 'sim'}"
        writer.write("INFO", "HCCL", "topoinfo_detect.cc:221",
                     f"[{threading.get_native_id()}]" + hccl_text.setup_line(
                         self.size, self.rank, self.identifier, server, self.device, self.device, "0.0.0.0"), run=True)
        writer.write("INFO", "HCCL", "externalinput.cc:383",
                     f"[{threading.get_native_id()}]HCCL_EXEC_TIMEOUT set by "
                     f"{'environment variable' if 'HCCL_EXEC_TIMEOUT' in self.env.raw else 'default'} "
                     f"to [{self.env.exec_timeout}]s", run=True)
        if self.size > 1:
            _hccl_heartbeat.register(self)

    def _refuse_environment(self, problem) -> None:
        if problem.variable == "HCCL_BUFFSIZE":
            raise RuntimeError(problem.message + _error_code.cpp_error("PTA", "VALUE"))
        if problem.variable == "MASTER_PORT":
            return  # torch's rendezvous has already refused it
        message = hccl_text.environment_error(problem.variable, self.env.raw.get(problem.variable, ""),
                                              problem.message)
        self._hccl_error("HcclCommInitRootInfoConfig(numRanks, &hcclID, rank, config, &(comm->hcclComm_))",
                         message)

    def _check_rank_table(self, path: str) -> None:
        try:
            table = rank_table.load(path)
        except OSError as exc:
            why = f"cannot be read ({exc.strerror})"
        else:
            why = table.problems[0] if table.problems else None
            if why is None and table.world_size != self.size:
                why = f"it lists {table.world_size} rank(s) but the job has {self.size}"
            if why is None and table.server_of_rank(self.rank) is None:
                why = f"rank {self.rank} is not in it"
            if why is None and not os.environ.get("ASCEND_RT_VISIBLE_DEVICES"):
                entry = next(d for d in table.server_of_rank(self.rank).devices if d.rank_id == self.rank)
                if entry.device_id != self.device:
                    why = f"it gives rank {self.rank} device {entry.device_id}, but the rank runs on device {self.device}"
        if why is not None:
            self._hccl_error("HcclCommInitClusterInfoConfig(rankTableFile, rank, config, &(comm->hcclComm_))",
                             hccl_text.rank_table_error(path, why))

    def _hccl_error(self, call: str, message: str) -> None:
        _plog.writer().write("ERROR", "HCCL", "op_base.cc:652", f"[{threading.get_native_id()}]{message}")
        raise RuntimeError(torch_npu_text.hccl_function_error(
            "createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:2626", call, 1,
            _error_code.cpp_error("DIST", "HCCL"), message))

    # ------------------------------------------------------------------ collectives
    def run(self, op: str, c10d: str, count: int, dtype, fn: Callable):
        """Run collective ``op`` (``fn()`` moves the data, waiting through :meth:`wait`) with HCCL's checks."""
        if self._deadline is not None:  # a coalesced call made of collectives: one collective for HCCL
            return fn()
        from ascend_compat.simulator import faults

        if not self.created:
            self._create()
        issued = faults.before_collective(c10d)
        if issued is not None:
            count = issued
        self.seq += 1
        self.inside, self._op, self._start = True, op, time.time()
        self._deadline = self._start + self.limit
        try:
            if self.size > 1:
                self._check_arguments(op, count, dtype)
            return fn()
        finally:
            self.inside, self._deadline = False, None

    def wait(self, work) -> None:
        """Wait for a gloo work of the current collective, within its time limit."""
        if self._deadline is None:
            work.wait()
            return
        try:
            work.wait(timedelta(seconds=max(self._deadline - time.time(), 0.001)))
            return
        except Exception:  # gloo's own words (timed out, peer closed) are not what HCCL says
            pass
        self._timed_out()

    def _check_arguments(self, op: str, count: int, dtype) -> None:
        import torch

        # host factories: under DeepSpeed's zero.Init the public torch.tensor/zeros add device="npu"
        mine = _host.tensor([_OPCODES.get(op, 0), count if op in _COUNTED else 0, _dtype_code(dtype)],
                            dtype=torch.int64)
        everyone = _host.empty(self.size * 3, dtype=torch.int64).zero_()
        self.wait(self.gloo.allgather([list(everyone.split(3))], [mine]))
        table = everyone.view(self.size, 3).tolist()
        for peer in dict.fromkeys(((self.rank - 1) % self.size, (self.rank + 1) % self.size)):
            theirs = table[peer]
            for index, parameter in ((0, "tag"), (1, "count"), (2, "dataType")):
                if theirs[index] != table[self.rank][index]:
                    self._inconsistent(op, parameter, table[self.rank][index], theirs[index], table, peer)

    def _inconsistent(self, op: str, parameter: str, local, remote, table, peer) -> None:
        names = {v: k for k, v in _OPCODES.items()}
        tag = hccl_text.tag(op, self.identifier)
        if parameter == "tag":
            local = tag
            remote = hccl_text.tag(names.get(table[peer][0], "unknown"), self.identifier)
        _plog.writer().write("ERROR", "HCCL", "rank_consistentcy_checker.cc:429",
                             f"[{threading.get_native_id()}]" + hccl_text.check_fail_line(parameter, local, remote))
        prefix = hccl_text.OPS.get(op, (op,))[0]
        raise RuntimeError(torch_npu_text.hccl_function_error(
            f"Hccl{prefix}:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:4120",
            f"Hccl{prefix}(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream(false))",
            1, _error_code.cpp_error("DIST", "HCCL"), hccl_text.inconsistent(tag, parameter, local, remote)))

    def _abnormal(self) -> list:
        """(peer, kind) for every peer that is lost or stuck, as HCCL's exception spreading reports them."""
        now, lost_after, found = time.time(), _hccl_heartbeat.lost_after(self.limit), []
        for peer in range(self.size):
            if peer == self.rank:
                continue
            beat = _hccl_heartbeat.read(self.store, peer)
            if beat is None:
                continue
            if now - beat.time > lost_after:
                found.append((beat, hccl_text.HEARTBEAT_LOST, beat.time + lost_after))
            elif beat.seq < self.seq:
                found.append((beat, hccl_text.STUCK, now))
        return found

    def _timed_out(self) -> None:
        """The current collective failed (time limit, or a peer's connection lost): wait out the limit,
        as HCCL does, then fail like torch_npu."""
        remaining = self._deadline - time.time()
        if remaining > 0:
            time.sleep(remaining)
        elapsed = time.time() - self._start
        writer = _plog.writer()
        tid = threading.get_native_id()
        if self.watchdog:  # torch_npu's watchdog logs with glog (stderr), then takes the process down
            import sys
            from datetime import datetime

            text = hccl_text.watchdog(self.rank, self.seq, self._op, 0, int(self.limit * 1000), int(elapsed * 1000))
            stamp = datetime.now().strftime("%m%d %H:%M:%S.%f")
            sys.stderr.write(f"[rank{self.rank}]:[E{stamp} ProcessGroupHCCL.cpp:922] {text}\n")
            raise RuntimeError(text)
        abnormal = self._abnormal()
        remote = str(abnormal[0][0].rank) if abnormal else "unknown"
        tag = hccl_text.tag(self._op, self.identifier)
        exceptions = [hccl_text.cluster_exception(beat.location, arrival, self.location, kind)
                      for beat, kind, arrival in abnormal]
        for line in hccl_text.task_exception_lines(2, self.seq, tag, 3, self.identifier, self.size, self.rank, remote):
            writer.write("ERROR", "HCCL", "task_exception_handler.cc:452", f"[{tid}]{line}")
        for line in exceptions:
            writer.write("ERROR", "HCCL", "task_exception_handler.cc:610", f"[{tid}]{line}")
        writer.write("ERROR", "RUNTIME", "log_inner.cpp:161",
                     f"{tid} ReportCallError:synchronize stream failed, runtime result = 507048")
        message = hccl_text.notify_timeout(os.getpid(), remote, tag, 2, self.seq, exceptions)
        raise RuntimeError(torch_npu_text.npu_function_error(
            "synchronize:torch_npu/csrc/core/npu/NPUStream.cpp:421", "AclrtSynchronizeStreamWithTimeout(stream, -1)",
            507048, _error_code.cpp_error("PTA", "ACL"), message))


_DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool",
           "complex64", "complex128", "uint16", "uint32", "uint64")


def _dtype_code(dtype) -> int:
    name = str(dtype).replace("torch.", "")
    return _DTYPES.index(name) + 1 if name in _DTYPES else 0
