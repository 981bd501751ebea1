"""Rehearse a cluster job on one machine and name the rank that broke it: ``run --simulate --nodes 2
--devices 2`` runs a plain DDP script (tests/simulator/scripts/cluster_job.py, CUDA-style, knowing nothing
of faults) as 2 nodes x 2 ranks; each fault kind is injected on one rank with ASCEND_COMPAT_SIM_FAULTS;
``error --log`` then reads only the logs the job left and must name that rank and its cause, with the
other three ranks as consequences. Short HCCL_EXEC_TIMEOUT keeps each run to ~20 s."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from subproc import clean_env

JOB = Path(__file__).resolve().parents[1] / "simulator" / "scripts" / "cluster_job.py"


def rehearse(log_dir: Path, faults: str = "", steps: int = 6, timeout: str = "4") -> subprocess.CompletedProcess:
    env = clean_env({"OMP_NUM_THREADS": "1", "HCCL_EXEC_TIMEOUT": timeout, "ASCEND_COMPAT_SIM_FAULTS": faults})
    return subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", "--nodes", "2", "--devices", "2",
                           "--log-dir", str(log_dir), str(JOB), str(steps)], env=env, capture_output=True, text=True,
                          timeout=300)


def diagnose(log_dir: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "error", "--log", str(log_dir), "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["job"]


def test_options_of_a_rehearsal_are_checked(tmp_path):
    for args, says in ((["--nodes", "2"], "add --simulate"), (["--simulate", "--node-env", "x"], "add --nodes N"),
                       (["--simulate", "--nodes", "1", "--node-env", "a", "--node-env", "b"], "2 --node-env files")):
        proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", *args, str(JOB)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr


@pytest.mark.slow
def test_two_nodes_of_two_ranks_train_each_node_with_its_own_npus(tmp_path):
    proc = rehearse(tmp_path / "logs", steps=3)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    done = sorted(line.split("]:", 1)[-1] for line in proc.stdout.splitlines() if ": done, mean loss" in line)
    assert len(done) == 4 and len({line.rsplit(" ", 1)[-1] for line in done}) == 1  # one loss, all ranks
    for rank in range(4):
        assert any(line.startswith(f"rank {rank} of 4 on {rank % 2} (2 devices)") for line in done), done
    for node in ("node0", "node1"):
        assert list((tmp_path / "logs" / node / "process_log" / "run" / "plog").glob("plog-*_*.log"))
        assert list((tmp_path / "logs" / node / "torchrun").rglob("attempt_0/1/stdout.log"))
    quiet = subprocess.run([sys.executable, "-m", "ascend_compat", "error", "--log", str(tmp_path / "logs")],
                           capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 1 and "no root cause found" in quiet.stdout


#: (fault, rank it is injected on, expected cause, expected code)
REHEARSALS = {
    "ai_core_error": ("aten::addmm=error:507015@rank=3@call=3", 3, "error", "507015"),
    "hang_before_collective": ("c10d::allreduce_=hang@rank=1@call=4", 1, "stuck", None),
    "slow_rank": ("aten::addmm=slow:30@rank=2@call=3", 2, "stuck", None),
    "dying_rank": ("aten::addmm=kill@rank=0@call=3", 0, "killed", "SIGKILL"),
    "wrong_size_collective": ("c10d::allreduce_=count:3@rank=2@call=4", 2, "inconsistent", "EI0005"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REHEARSALS))
def test_a_rehearsed_fault_is_diagnosed_from_the_logs_alone(tmp_path, name):
    fault, rank, cause, code = REHEARSALS[name]
    proc = rehearse(tmp_path / "logs", fault)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "diagnose: ascend-compat error --log" in proc.stderr
    job = diagnose(tmp_path / "logs")
    root = job["root_cause"]
    assert (root["rank"], root["cause"], root["code"]) == (rank, cause, code), json.dumps(job, indent=1)[:3000]
    assert root["node"] == f"node{rank // 2}" and root["device"] == rank % 2
    assert sorted(c["rank"] for c in job["consequences"]) == sorted({0, 1, 2, 3} - {rank})
    if cause in ("error", "stuck", "killed"):  # the other node's ranks waited out HCCL_EXEC_TIMEOUT
        other = [c for c in job["consequences"] if c["node"] != root["node"]]
        assert other and all(c["code"] == "EI0002" for c in other), job["consequences"]
