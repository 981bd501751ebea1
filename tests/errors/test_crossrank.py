"""errors.crossrank: a job's logs (plogs, torchrun per-rank files, launcher output, a directory per node)
read together; the root-cause rank separated from the ranks that failed because of it. The logs are
written here with the same format writers the simulator uses (errors.plog, errors.hccl_text), at chosen
times, so each rule of the fault chain is tested on its own."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ascend_compat.errors import hccl_text, plog, torch_npu_text
from ascend_compat.errors.crossrank import diagnose_paths
from ascend_compat.errors.crossrank.report import to_dict, to_text

T0 = time.mktime((2026, 5, 6, 7, 8, 9, 0, 0, -1)) + 0.25
NODES = {0: "node0", 1: "node0", 2: "node1", 3: "node1"}


class Job:
    """A 2-node x 2-rank job's log tree: ``root/node<k>/process_log`` plogs, ``torchrun`` rank files,
    ``launcher.log``."""

    def __init__(self, root: Path, exec_timeout: int = 6) -> None:
        self.root = root
        self.writers = {}
        for rank, node in NODES.items():
            w = self.writers[rank] = plog.PlogWriter(str(root / node / "process_log"), pid=1000 + rank, pname="python3")
            w.write("INFO", "HCCL", "topoinfo_detect.cc:221", "[1]" + hccl_text.setup_line(
                4, rank, "node0%sim_1_0_9", f"{node}%sim", rank % 2, rank % 2, "0.0.0.0"), run=True, when=T0 - 30)
            w.write("INFO", "HCCL", "externalinput.cc:383", f"[1]HCCL_EXEC_TIMEOUT set by environment variable to "
                                                             f"[{exec_timeout}]s", run=True, when=T0 - 30)
        self.launcher = {n: [] for n in ("node0", "node1")}

    def error(self, rank, when, code):
        self.writers[rank].write("ERROR", "RUNTIME", "log_inner.cpp:161",
                                 f"1 ReportCallError:synchronize stream failed, runtime result = {code}", when=when)

    def timeout(self, rank, when, remote="unknown", claims=()):
        w = self.writers[rank]
        for line in hccl_text.task_exception_lines(2, 5, "AllReduce_x", 3, "x", 4, rank, remote):
            w.write("ERROR", "HCCL", "task_exception_handler.cc:452", "[1]" + line, when=when)
        for location, kind in claims:
            w.write("ERROR", "HCCL", "task_exception_handler.cc:610",
                    "[1]" + hccl_text.cluster_exception(location, when - 1, f"{NODES[rank]}/{rank % 2}", kind), when=when)

    def mismatch(self, rank, when, local, remote):
        self.writers[rank].write("ERROR", "HCCL", "rank_consistentcy_checker.cc:429",
                                 "[1]" + hccl_text.check_fail_line("count", local, remote), when=when)

    def sigterm(self, rank, when):
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(when)) + ".500000"
        self.launcher[NODES[rank]].append(f"W{stamp} 77 torch/distributed/elastic/multiprocessing/api.py:1028] "
                                          f"Sending process {1000 + rank} closing signal SIGTERM")

    def report(self, rank, when, exitcode):
        signal = {-9: " (SIGKILL)", -15: " (SIGTERM)"}.get(exitcode, "")
        self.launcher[NODES[rank]] += [
            "[0]:", f"  time      : {time.strftime('%Y-%m-%d_%H:%M:%S', time.localtime(when))}",
            "  host      : localhost", f"  rank      : {rank} (local_rank: {rank % 2})",
            f"  exitcode  : {exitcode} (pid: {1000 + rank}){signal}", "  error_file: <N/A>"]

    def stderr(self, rank, text):
        path = self.root / NODES[rank] / "torchrun" / "none_x" / "attempt_0" / str(rank % 2) / "stderr.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"[rank{rank}]: {line}\n" for line in text.splitlines()))

    def done(self) -> Path:
        for w in self.writers.values():
            w.close()
        for node, lines in self.launcher.items():
            (self.root / node).mkdir(parents=True, exist_ok=True)
            (self.root / node / "launcher.log").write_text("\n".join(lines) + "\n")
        return self.root


def diagnose(job: Job):
    return diagnose_paths([str(job.done())])


def test_first_non_timeout_error_is_the_root_and_timeouts_terminations_are_consequences(tmp_path):
    job = Job(tmp_path)
    job.error(3, T0, 507015)
    job.sigterm(2, T0 + 0.8)
    job.report(3, T0 + 1, 1)
    job.timeout(0, T0 + 6.1, "2")
    job.timeout(1, T0 + 6.2, "2")
    d = diagnose(job)
    assert (d.root.rank, d.root.node, d.root.device, d.root.code, d.root.cause) == (3, "node1", 1, "507015", "error")
    assert d.ranks == [0, 1, 2, 3] and d.nodes == ["node0", "node1"]
    how = {c.rank: (c.code, c.how) for c in d.consequences}
    assert how[0][0] == how[1][0] == "EI0002" and "waiting for rank 2" in how[0][1]
    assert how[2] == ("SIGTERM", "terminated by its launcher (SIGTERM) after another process on its node failed")
    assert d.exec_timeout == 6
    text = to_text(d)
    assert "root cause: rank 3 (node node1, device 1)" in text and "ACL_ERROR_RT_AICORE_EXCEPTION" in text
    assert "3 rank(s) failed because of rank 3" in text


def test_the_stderr_of_the_rank_gives_the_error_text(tmp_path):
    job = Job(tmp_path)
    job.error(1, T0, 507035)
    suffix = torch_npu_text.suffix(1001, 1, 1, "ERR00100", "PTA", "call acl api failed", T0)
    job.stderr(1, f"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                  f"RuntimeError: NPU function error: call aclnnGelu failed, error code is 507035\n{suffix}")
    job.timeout(2, T0 + 6)
    d = diagnose(job)
    assert d.root.rank == 1 and d.root.first_error.startswith("RuntimeError: NPU function error: call aclnnGelu")
    assert d.root.time == T0  # the plog's time, to the microsecond


def test_a_process_killed_by_a_signal_its_launcher_did_not_send(tmp_path):
    job = Job(tmp_path)
    job.report(2, T0, -9)
    job.sigterm(3, T0 + 0.3)
    lost = [("node1/0", hccl_text.HEARTBEAT_LOST), ("node1/1", hccl_text.HEARTBEAT_LOST)]
    job.timeout(0, T0 + 6, "2", lost)
    job.timeout(1, T0 + 6, "2", lost)
    d = diagnose(job)
    assert (d.root.rank, d.root.cause, d.root.code) == (2, "killed", "SIGKILL")
    assert {c.rank: c.code for c in d.consequences} == {0: "EI0002", 1: "EI0002", 3: "SIGTERM"}
    assert "OOM killer" in to_text(d)


def test_a_rank_that_timed_out_and_then_aborted_is_a_consequence(tmp_path):
    job = Job(tmp_path)
    for rank in (0, 2, 3):
        job.timeout(rank, T0 + 6.7, "1", [("node0/1", hccl_text.STUCK)])
    job.report(2, T0 + 6, -6)  # torchrun's report: whole seconds, and the abort came at exit
    d = diagnose(job)
    assert (d.root.rank, d.root.cause) == (1, "stuck")
    assert {c.rank: c.code for c in d.consequences}[2] == "EI0002"


def test_the_rank_hccl_names_stuck_is_the_root(tmp_path):
    job = Job(tmp_path)
    for rank in (0, 2, 3):
        job.timeout(rank, T0 + 6, "1", [("node0/1", hccl_text.STUCK)])
    job.sigterm(1, T0 + 6.5)
    d = diagnose(job)
    assert (d.root.rank, d.root.cause, d.root.code) == (1, "stuck", None)
    assert sorted(c.rank for c in d.consequences) == [0, 2, 3]


def test_without_hccls_claims_the_rank_that_never_timed_out_is_the_root(tmp_path):
    job = Job(tmp_path)
    for rank in (0, 1, 3):
        job.timeout(rank, T0 + 6)
    d = diagnose(job)
    assert (d.root.rank, d.root.cause) == (2, "stuck") and "never reached the collective" in d.root.first_error


def test_the_late_reporter_when_every_rank_timed_out(tmp_path):
    job = Job(tmp_path)
    for rank in (0, 2, 3):
        job.timeout(rank, T0 + 6)
    job.timeout(1, T0 + 30)
    d = diagnose(job)
    assert (d.root.rank, d.root.cause) == (1, "late") and "24 s after the first rank" in d.root.first_error


def test_simultaneous_timeouts_everywhere_name_no_rank(tmp_path):
    job = Job(tmp_path)
    for rank in range(4):
        job.timeout(rank, T0 + 6 + rank * 0.01)
    d = diagnose(job)
    assert d.root is None and "different collectives" in d.note
    assert len(d.consequences) == 4


def test_the_rank_whose_collective_arguments_differ(tmp_path):
    job = Job(tmp_path)
    job.mismatch(0, T0, 16, 7)
    job.mismatch(2, T0, 16, 7)
    job.mismatch(3, T0, 7, 16)
    job.timeout(1, T0 + 6)
    d = diagnose(job)
    assert (d.root.rank, d.root.code, d.root.cause) == (3, "EI0005", "inconsistent")
    assert "count 7 where its peers used 16" in d.root.first_error
    assert "pad uneven batches" in to_text(d)


def test_json_has_the_root_cause_and_consequences_and_the_cli_reads_several_node_directories(tmp_path):
    job = Job(tmp_path)
    job.error(3, T0, 507015)
    job.timeout(0, T0 + 6, "3")
    job.done()
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "error", "--format", "json", "--log",
                           str(tmp_path / "node0"), str(tmp_path / "node1")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["schema_version"] == "1.1"
    root = out["job"]["root_cause"]
    assert {k: root[k] for k in ("rank", "node", "device", "code")} == {"rank": 3, "node": "node1", "device": 1,
                                                                       "code": "507015"}
    assert "runtime result = 507015" in root["first_error"]
    assert out["job"]["consequences"] == [{"rank": 0, "node": "node0", "code": "EI0002",
                                           "how": "HCCL timeout waiting for rank 3", "time": T0 + 6}]


def test_logs_without_errors_find_nothing_and_exit_1(tmp_path):
    root = Job(tmp_path).done()
    d = diagnose_paths([str(root)])
    assert d.root is None and d.consequences == [] and d.ranks == [0, 1, 2, 3]
    assert to_dict(d)["root_cause"] is None
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "error", "--log", str(root)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "no root cause found" in proc.stdout
    missing = subprocess.run([sys.executable, "-m", "ascend_compat", "error", "--log", str(root), str(tmp_path / "x")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 3 and "no such file or directory" in missing.stderr
