"""The simulated HCCL communicator (simulator/_hccl_comm.py): the job's environment refused or honoured
as torch_npu/HCCL do when the communicator is created, and collectives that fail as on Ascend: after
HCCL_EXEC_TIMEOUT with torch_npu's 507048/EI0002 naming the stuck peer, or EI0005 for different
arguments, each with HCCL's plog lines."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


from _subproc import check, clean_env, run_python

SCRIPTS = Path(__file__).parent / "scripts"


def _first_collective(tmp_path, env: dict, group_env: dict = None) -> list:
    """Lines ``VAR OK|ERR <text>``: the first all-reduce of a default group (``env``) and then of one
    sub-group per ``group_env`` entry, each created with that one variable set."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    return check(run_python(f"""
import os, warnings
import ascend_compat.simulator as sim
sim.install()
import torch, torch.distributed as dist

def first(var, group=None):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            dist.all_reduce(torch.ones(2, device="npu"), group=group)
            print(var, "OK", " | ".join(str(w.message) for w in caught))
        except RuntimeError as exc:
            print(var, "ERR", " | ".join(str(exc).splitlines()))

dist.init_process_group("hccl", init_method="file://{tmp_path / 'store'}", rank=0, world_size=1)
first("default")
for var, value in {group_env or {}!r}.items():
    os.environ[var] = value
    first(var, dist.new_group([0]))
    del os.environ[var]
""", {"ASCEND_PROCESS_LOG_PATH": str(tmp_path / "logs"), **env})).splitlines()


def test_environment_refused_or_honoured_at_communicator_creation(tmp_path):
    out = _first_collective(tmp_path, {}, {"HCCL_BUFFSIZE": "0", "HCCL_CONNECT_TIMEOUT": "30",
                                           "HCCL_IF_IP": "10.0.0.300", "HCCL_EXEC_TIMEOUT": "-3"})
    lines = {line.split(" ", 1)[0]: line for line in out if " OK" in line or " ERR" in line}
    assert lines["default"].startswith("default OK")
    assert "ERR HCCL_BUFFSIZE should be positive." in lines["HCCL_BUFFSIZE"]
    assert "ERR00003 PTA invalid value" in lines["HCCL_BUFFSIZE"]
    assert "HCCL function error" in lines["HCCL_CONNECT_TIMEOUT"] and "EI0001" in lines["HCCL_CONNECT_TIMEOUT"]
    assert "error code is 1" in lines["HCCL_CONNECT_TIMEOUT"] and "ERR02200 DIST" in lines["HCCL_CONNECT_TIMEOUT"]
    assert "EI0001" in lines["HCCL_IF_IP"]
    assert "OK Get env HCCL_EXEC_TIMEOUT less than 0, so reset it to the default value." in lines["HCCL_EXEC_TIMEOUT"]
    run_log = "".join(p.read_text() for p in (tmp_path / "logs" / "run" / "plog").iterdir())
    assert "SetupAgent rankNum[1], rank[0]" in run_log and "HCCL_EXEC_TIMEOUT set by default to [1836]s" in run_log


def test_a_usable_rank_table_must_match_the_job_and_builds_only_the_default_group(tmp_path):
    def table(path, ranks):
        path.write_text(json.dumps({"status": "completed", "version": "1.0", "server_count": "1", "server_list": [
            {"server_id": "10.0.0.1", "device": [{"device_id": str(d), "device_ip": f"192.168.0.{d + 2}",
                                                   "rank_id": str(d)} for d in range(ranks)]}]}))
        return str(path)

    good = _first_collective(tmp_path / "a", {"RANK_TABLE_FILE": table(tmp_path / "good.json", 1)})
    assert any(line.startswith("default OK") and "300 seconds or more" in line for line in good), good
    wide = table(tmp_path / "wide.json", 2)
    out = _first_collective(tmp_path / "b", {"HCCL_CONNECT_TIMEOUT": "300"}, {"RANK_TABLE_FILE": wide})
    assert any(line.startswith("RANK_TABLE_FILE OK") for line in out), out  # a sub-group: not from the table
    out = _first_collective(tmp_path / "c", {"RANK_TABLE_FILE": wide, "HCCL_CONNECT_TIMEOUT": "300"})
    refused = next(line for line in out if line.startswith("default"))
    assert "ERR" in refused and "EI0004" in refused and "lists 2 rank(s) but the job has 1" in refused


def _torchrun(tmp_path, faults: str, calls: int = 3):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           str(SCRIPTS / "dist_fault.py"), str(tmp_path), str(calls)]
    env = clean_env({"OMP_NUM_THREADS": "1", "HCCL_EXEC_TIMEOUT": "3", "ASCEND_COMPAT_SIM_FAULTS": faults,
                     "ASCEND_PROCESS_LOG_PATH": str(tmp_path / "logs")})
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    reports = {int(p.stem[4:]): json.loads(p.read_text()) for p in tmp_path.glob("rank*.json")}
    return proc, reports, time.time() - t0


def test_a_peer_stuck_before_a_collective_fails_the_others_after_hccl_exec_timeout(tmp_path):
    proc, reports, _ = _torchrun(tmp_path, "c10d::allreduce_=hang@rank=1@call=2")
    assert proc.returncode != 0
    waiting = reports[0]
    assert waiting["results"] == [[3.0] * 4] and waiting["call"] == 2
    assert 3.0 <= waiting["waited"] < 15
    error = waiting["error"]
    assert "NPU function error" in error and "error code is 507048" in error
    assert "EI0002" in error and "remote rank [1]" in error and "Stuck Occurred" in error
    assert 1 not in reports  # the stuck rank never returned; torchrun ended it
    plog = "".join(p.read_text() for p in (tmp_path / "logs" / "debug" / "plog").iterdir())
    assert "taskType[Notify Wait]" in plog and "remote rank:[1]" in plog and "runtime result = 507048" in plog


def test_a_wrong_size_collective_fails_with_ei0005_on_the_ranks_that_see_it(tmp_path):
    proc, reports, _ = _torchrun(tmp_path, "c10d::allreduce_=count:3@rank=1@call=2")
    assert proc.returncode != 0
    for rank, (local, remote) in ((0, (4, 3)), (1, (3, 4))):
        error = reports[rank]["error"]
        assert reports[rank]["call"] == 2 and "HCCL function error" in error
        assert f"parameter[count], local[{local}], remote [{remote}]" in error
    plog = "".join(p.read_text() for p in (tmp_path / "logs" / "debug" / "plog").iterdir())
    assert "CMD information count check fail. local[3], remote[4]" in plog
