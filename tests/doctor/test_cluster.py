"""doctor --cluster (doctor/cluster.py): a multi-node job's rank table, per-node environment, addresses,
timeouts and versions, checked before launch; one line per problem with its fix."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ascend_compat.doctor import cluster, envdump
from ascend_compat.doctor.environment import Status


def rank_table(servers=("10.0.0.11", "10.0.0.12"), devices=2, **change):
    data = {"status": "completed", "version": "1.0", "server_count": str(len(servers)), "server_list": [
        {"server_id": sid, "device": [{"device_id": str(d), "device_ip": f"192.168.{s}.{8 + d}",
                                       "rank_id": str(s * devices + d)} for d in range(devices)]}
        for s, sid in enumerate(servers)]}
    data.update(change)
    return data


def node_env(name, rank, ip, **extra):
    env = {"HOSTNAME": name, "MASTER_ADDR": "10.0.0.11", "MASTER_PORT": "29500", "WORLD_SIZE": "4",
           "LOCAL_WORLD_SIZE": "2", "NODE_RANK": str(rank), "HCCL_IF_IP": ip, "HCCL_EXEC_TIMEOUT": "600",
           "HCCL_CONNECT_TIMEOUT": "600"}
    env.update(extra)
    return env


@pytest.fixture
def job(tmp_path):
    def make(table=None, envs=None):
        path = tmp_path / "rank_table.json"
        path.write_text(json.dumps(table or rank_table()))
        envs = envs or [node_env("node0", 0, "10.0.0.11"), node_env("node1", 1, "10.0.0.12")]
        files = []
        for env in envs:
            f = tmp_path / f"{env['HOSTNAME']}.env"
            f.write_text("".join(f"export {k}={v!r}\n" if i % 2 else f"{k}={v}\n"
                                 for i, (k, v) in enumerate(env.items())))
            files.append(f)
        return path, files
    return make


def run(path, files, *extra):
    args = [sys.executable, "-m", "ascend_compat", "doctor", "--cluster", str(path)]
    for f in files:
        args += ["--node-env", str(f)]
    return subprocess.run(args + list(extra), capture_output=True, text=True, timeout=120)


def checks(path, files, **kw):
    nodes = [cluster.Node(cluster.node_name(envdump.read(str(f)), str(f)), envdump.read(str(f))) for f in files]
    return cluster.check_cluster(nodes, str(path), **kw)


def failing(results):
    return [c.detail for c in results if c.status is Status.FAIL]


def test_env_dumps_in_every_shell_form():
    env = envdump.parse("# saved on node1\nA=1\nexport B='two words'\ndeclare -x C=\"3\"\nD=multi\nline\n\n")
    assert env == {"A": "1", "B": "two words", "C": "3", "D": "multi\nline"}


def test_a_consistent_job_passes(job):
    path, files = job()
    proc = run(path, files, "--step-time", "30")
    assert proc.returncode == 0, proc.stdout
    assert "rank_table.json: version 1.0, 2 server(s), 4 rank(s)" in proc.stdout
    assert "HCCL_EXEC_TIMEOUT=600 s (20 steps)" in proc.stdout


def test_a_misconfigured_rank_table_is_caught_before_launch(job):
    table = rank_table()
    table["server_list"][1]["device"][1]["rank_id"] = "0"  # rank 0 twice, rank 3 missing
    table["server_count"] = "3"
    path, files = job(table)
    proc = run(path, files)
    assert proc.returncode == 1
    assert "rank_id 0 is given to server 10.0.0.11 and server 10.0.0.12" in proc.stdout
    assert "server_count is 3 but server_list has 2" in proc.stdout
    assert "fix: fix the rank table: HCCL refuses it when the job starts (EI0004)." in proc.stdout
    wrong_size = failing(checks(*job(rank_table(devices=3)), world_size=4))
    assert any("lists 6 rank(s) but the job's WORLD_SIZE is 4" in d for d in wrong_size)
    assert any("server 10.0.0.11 lists 3 device(s) but each node runs 2 process(es)" in d for d in wrong_size)


def test_a_mismatched_hccl_if_ip_is_caught(job):
    copied = failing(checks(*job(envs=[node_env("node0", 0, "10.0.0.11"), node_env("node1", 1, "10.0.0.11")])))
    assert any("HCCL_IF_IP=10.0.0.11 is set on node0, node1" in d for d in copied)
    typo = failing(checks(*job(envs=[node_env("node0", 0, "10.0.0.11"), node_env("node1", 1, "10.0.0.21")])))
    assert any("node node1: HCCL_IF_IP=10.0.0.21 is not the address of any server in the rank table" in d
               for d in typo)
    three = rank_table(servers=("10.0.0.11", "10.0.0.12", "192.168.9.5"))
    off = checks(*job(three, [node_env("node0", 0, "10.0.0.11", WORLD_SIZE="6"),
                              node_env("node1", 1, "10.0.0.12", WORLD_SIZE="6"),
                              node_env("node2", 2, "192.168.9.5", WORLD_SIZE="6")]))
    assert any(c.status is Status.WARN and "node node2: HCCL_IF_IP=192.168.9.5 is not on the network of the other "
               "nodes (10.0.0.0/24)" in c.detail for c in off)


def test_rendezvous_and_node_ranks_must_agree(job):
    envs = [node_env("node0", 0, "10.0.0.11"), node_env("node1", 0, "10.0.0.12", MASTER_PORT="29501")]
    bad = failing(checks(*job(envs=envs)))
    assert any("MASTER_PORT differs between nodes: node0=29500, node1=29501" in d for d in bad)
    assert any("NODE_RANK 0 is set on several nodes" in d for d in bad)


def test_timeouts_against_the_step_time_and_each_nodes_hccl_values(job):
    path, files = job(envs=[node_env("node0", 0, "10.0.0.11", HCCL_EXEC_TIMEOUT="60"),
                            node_env("node1", 1, "10.0.0.12", HCCL_EXEC_TIMEOUT="60", HCCL_BUFFSIZE="0")])
    results = checks(path, files, step_time=90)
    assert any("HCCL_EXEC_TIMEOUT=60 s is not above the expected step time 90 s" in d for d in failing(results))
    assert any("node1: HCCL_BUFFSIZE should be positive." in d for d in failing(results))
    assert any("HCCL_BUFFSIZE differs between nodes" in d for d in failing(results))
    warn = checks(path, files, step_time=30)
    assert any(c.status is Status.WARN and "less than 3 steps" in c.detail for c in warn)


def test_visible_devices_against_the_rank_table(job):
    envs = [node_env("node0", 0, "10.0.0.11", ASCEND_RT_VISIBLE_DEVICES="0,1"),
            node_env("node1", 1, "10.0.0.12", ASCEND_RT_VISIBLE_DEVICES="2,3")]
    bad = failing(checks(*job(envs=envs)))
    assert any("node node1: the rank table gives server 10.0.0.12 device(s) [0, 1], but ASCEND_RT_VISIBLE_DEVICES="
               "2,3 hides them" in d for d in bad)
    assert not any("node node0" in d for d in bad)


def test_the_version_matrix_across_nodes(job, tmp_path):
    path, files = job()
    reports = []
    for name, npu in (("node0", "2.5.1"), ("node1", "2.5.1.post2")):
        report = tmp_path / f"{name}.json"
        report.write_text(json.dumps({"host": name, "versions": {"python": "3.11.7", "torch": "2.5.1",
                                                                 "torch_npu": npu, "cann": "8.0.0",
                                                                 "driver": "24.1.0"}}))
        reports += ["--node-report", str(report)]
    proc = run(path, files, *reports)
    assert proc.returncode == 1
    assert "torch_npu differs between nodes: node0 2.5.1, node1 2.5.1.post2" in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert run(path, files, "--node-report", str(bad)).returncode == 3


def test_doctor_json_has_the_versions_a_node_report_needs():
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "doctor", "--format", "json", "--no-import"],
                          capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert set(report["versions"]) == set(cluster.VERSION_KEYS) and report["host"]


def test_cluster_options_need_cluster_and_a_missing_table_is_an_input_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "doctor", "--step-time", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "go with --cluster" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "doctor", "--cluster", str(tmp_path / "none.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and "no such rank table file" in proc.stderr
