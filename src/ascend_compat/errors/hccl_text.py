"""What HCCL and torch_npu's HCCL process group print when a collective fails: written by the simulated
hccl backend, recognised by the cross-rank diagnosis, so both read one copy of each format.

Formats, from public sources (the wording marked *ours* is not published and stands in for it):

* EI0002 on screen, as torch_npu shows it after error 507048 (torch_npu ``docs/.../HCCL_timeout.md``):
  ``EI0002: [PID: <pid>] <time> The wait execution of the Notify register times out. Reason: The Notify
  register has not received the Notify record from remote rank [<r>].base information: [streamID:[..],
  taskID[..], tag[<tag>], AlgType(level 0-1-2):[..].] task information: [<abnormal devices>]`` and the
  four "Possible Cause" items.
* The plog lines of the same failure (MindCluster fault-diagnosis test data, HCCL user guide):
  ``[TaskExceptionHandler][Callback]Task run failed, base information is streamID:[..], taskID[..],
  taskType[Notify Wait], tag[<tag>], index[..], AlgType(level 0-1-2):[..].``, ``... groupRank information is
  group:[<id>], rankSize[<n>], rankId[<r>].``, ``... para information is notify id:[..], stage:[ffffffff],
  remote rank:[<r>].`` and, from HCCL's exception spreading, ``Cluster Exception Location[IP/ID]:[<ip/id>],
  Arrival Time:[<ctime>], Discoverer:[<ip/id>], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1.
  Process has exited, 2. Network Disconnected`` (the "Stuck Occurred" reason text is *ours*).
* EI0005, the collective-argument consistency check (HCCL user guide): ``EI0005: <time> The arguments for
  collective communication are inconsistent between ranks:tag[<tag>], parameter[count], local[..], remote
  [..]`` and in the plog ``CMD information <parameter> check fail. local[..], remote[..]``.
* Communicator creation in the run log: ``[HCCL_TRACE]SetupAgent rankNum[<n>], rank[<r>], rootInfo
  identifier[<id>], server[<ip%nic>], logicDevId[<d>], phydevId[<d>], deviceIp[<ip>]``.
* torch_npu's watchdog (``WorkHCCL::checkTimeout``): ``[Rank <r>] Watchdog caught collective operation
  timeout: WorkHCCL(SeqNum=<n>, OpType=<OP>, NumelIn=<n>, NumelOut=<n>, Timeout(ms)=<ms>) ran for <ms>
  milliseconds before timing out.``
* EI0001 (environment) and EI0004 (rank table) bodies are *ours*: HCCL's texts are not published.
"""
from __future__ import annotations

import re
import time
from typing import Optional, Sequence

from ascend_compat.errors.plog import format_time

#: torch's collective names -> HCCL's tag prefixes and torch_npu's OpType names
OPS = {"allreduce": ("AllReduce", "ALLREDUCE"), "broadcast": ("Broadcast", "BROADCAST"),
       "allgather": ("AllGather", "ALLGATHER"), "reduce_scatter": ("ReduceScatter", "REDUCE_SCATTER"),
       "alltoall": ("AlltoAll", "ALLTOALL"), "reduce": ("Reduce", "REDUCE"), "gather": ("Gather", "GATHER"),
       "scatter": ("Scatter", "SCATTER"), "barrier": ("AllReduce", "BARRIER"), "send": ("Send", "SEND"),
       "recv": ("Receive", "RECV")}

HEARTBEAT_LOST = "Heartbeat Lost Occurred"
STUCK = "Stuck Occurred"
REASONS = {HEARTBEAT_LOST: "1. Process has exited, 2. Network Disconnected",
           STUCK: "1. The process is stuck or slower than HCCL_EXEC_TIMEOUT, 2. The rank issued other collectives"}

_POSSIBLE_CAUSE = (
    "        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, "
    "collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to "
    "complete a communication operation within the timeout interval. (default 1800s, You can set the interval by "
    "using HCCL_EXEC_TIMEOUT.)3. The number of training samples of each NPU is inconsistent.4. Packet loss or "
    "other connectivity problems occur on the communication link.")


def tag(op: str, identifier: str) -> str:
    return f"{OPS.get(op, (op.title(), op.upper()))[0]}_{identifier}"


def cluster_exception(location: str, arrival: float, discoverer: str, kind: str) -> str:
    return (f"Cluster Exception Location[IP/ID]:[{location}], Arrival Time:[{time.ctime(arrival)}], "
            f"Discoverer:[{discoverer}], ExceptionType:[{kind}], Possible Reason:{REASONS[kind]}")


def notify_timeout(pid: int, remote: str, tag_name: str, stream_id: int, task_id: int,
                   exceptions: Sequence[str] = (), when: Optional[float] = None) -> str:
    """The EI0002 message (several lines); ``exceptions`` are :func:`cluster_exception` lines."""
    info = ""
    if exceptions:
        info = f"\nthere are(is) {len(exceptions)} abnormal device(s):\n" + \
               "".join(f"    {line}\n" for line in exceptions)
    return (f"EI0002: [PID: {pid}] {format_time(time.time() if when is None else when)} The wait execution of the "
            f"Notify register times out. Reason: The Notify register has not received the Notify record from remote "
            f"rank [{remote}].base information: [streamID:[{stream_id}], taskID[{task_id}], tag[{tag_name}], "
            f"AlgType(level 0-1-2):[null-null-ring].] task information: [{info}]\n{_POSSIBLE_CAUSE}")


def task_exception_lines(stream_id: int, task_id: int, tag_name: str, index: int, group: str, size: int,
                         rank: int, remote: str) -> list[str]:
    """The three plog lines HCCL's task-exception callback writes for a notify-wait timeout."""
    head = "[TaskExceptionHandler][Callback]Task run failed, "
    return [f"{head}base information is streamID:[{stream_id}], taskID[{task_id}], taskType[Notify Wait], "
            f"tag[{tag_name}], index[{index}], AlgType(level 0-1-2):[null-null-ring].",
            f"{head}groupRank information is group:[{group}], rankSize[{size}], rankId[{rank}].",
            f"{head}para information is notify id:[0x{(rank << 32) | 0x50:016x}], stage:[ffffffff], "
            f"remote rank:[{remote}]."]


def inconsistent(tag_name: str, parameter: str, local, remote, when: Optional[float] = None) -> str:
    """The EI0005 message."""
    return (f"EI0005: {format_time(time.time() if when is None else when)} The arguments for collective "
            f"communication are inconsistent between ranks:tag[{tag_name}], parameter[{parameter}], local[{local}], "
            f"remote [{remote}]\n        Solution: Check whether the training script and ranktable of each NPU are "
            "consistent.")


def check_fail_line(parameter: str, local, remote) -> str:
    return f"[RankConsistentcyChecker][ReportCmdInfoCheckFailed]CMD information {parameter} check fail. " \
           f"local[{local}], remote[{remote}]"


def setup_line(size: int, rank: int, identifier: str, server: str, logic: int, physical: int, device_ip: str) -> str:
    return (f"[HCCL_TRACE]SetupAgent rankNum[{size}], rank[{rank}], rootInfo identifier[{identifier}], "
            f"server[{server}], logicDevId[{logic}], phydevId[{physical}], deviceIp[{device_ip}]")


def watchdog(rank: int, seq: int, op: str, numel: int, timeout_ms: int, elapsed_ms: int) -> str:
    return (f"[Rank {rank}] Watchdog caught collective operation timeout: WorkHCCL(SeqNum={seq}, "
            f"OpType={OPS.get(op, (op, op.upper()))[1]}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms}) "
            f"ran for {elapsed_ms} milliseconds before timing out.")


def environment_error(variable: str, value: str, why: str) -> str:
    """EI0001 (body ours)."""
    return f"EI0001: Environment variable {variable}={value!r} is invalid: {why}"


def rank_table_error(path: str, why: str) -> str:
    """EI0004 (body ours)."""
    return f"EI0004: The ranktable {path} is invalid: {why}"


# ------------------------------------------------------------------ recognisers (the diagnosis reads these)
SETUP = re.compile(r"SetupAgent rankNum\[(\d+)\], rank\[(\d+)\].*?identifier\[([^\]]*)\], server\[([^\]]*)\]"
                   r"(?:.*?logicDevId\[(\d+)\])?(?:, phydevId\[(\d+)\])?")
ENTRY = re.compile(r"Entry-HcclCommInitRootInfo\w*:ranks\[(\d+)\], rank\[(\d+)\].*?host ip\[([^\]]*)\]"
                   r".*?deviceLogicId\[(\d+)\]")
INIT_INFO = re.compile(r"hcclCommInitInfo:commId\[[^\]]*\], rank\[(\d+)\], totalRanks\[(\d+)\], "
                       r"serverId\[([^\]]*)\].*?logicDevId\[(\d+)\]")
NOTIFY_BASE = re.compile(r"taskType\[Notify Wait\], tag\[([^\]]*)\]")
GROUP_RANK = re.compile(r"groupRank information is group:\[([^\]]*)\], rankSize\[(\d+)\], rankId\[(\d+)\]")
REMOTE_RANK = re.compile(r"remote rank:\[(\w+)\]")
CLUSTER = re.compile(r"Cluster Exception Location\[IP/ID\]:\[([^\]]*)\], Arrival Time:\[([^\]]*)\], "
                     r"Discoverer:\[([^\]]*)\], ExceptionType:\[([^\]]*)\]")
EI0002 = re.compile(r"The wait execution of the Notify register times out.*?remote rank \[(\w+)\]")
EI0005 = re.compile(r"inconsistent between ranks:tag\[([^\]]*)\], parameter\[(\w+)\], local\[([^\]]*)\], "
                    r"remote ?\[([^\]]*)\]")
CHECK_FAIL = re.compile(r"CMD information (\w+) check fail\. local\[([^\]]*)\], remote\[([^\]]*)\]")
WATCHDOG = re.compile(r"\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkHCCL\(SeqNum=(\d+), "
                      r"OpType=(\w+)")
