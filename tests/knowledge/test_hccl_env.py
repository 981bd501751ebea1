"""knowledge.hccl_env: the HCCL job variables read as torch_npu (strtol, defaults, warnings) and HCCL
(ranges) read them."""
from __future__ import annotations

import os

from ascend_compat.knowledge import hccl_env
from ascend_compat.knowledge.hccl_env import ERROR, INFO, WARNING, read, strtol


def _problem(env, variable):
    return [p for p in env.problems if p.variable == variable]


def test_strtol_reads_leading_digits_like_c():
    assert strtol("42") == (42, True)
    assert strtol("  -7") == (-7, True)
    assert strtol("30m") == (30, False)
    assert strtol("abc") == (0, False)
    assert strtol("") == (0, False)


def test_defaults_when_nothing_is_set():
    env = read({})
    assert (env.exec_timeout, env.connect_timeout, env.buffsize_mb) == (1836, 120, 200)
    assert env.if_ip is None and env.rank_table_file is None and env.problems == ()


def test_exec_timeout_negative_resets_with_torch_npus_warning_and_zero_never_times_out():
    neg = read({"HCCL_EXEC_TIMEOUT": "-5"})
    assert neg.exec_timeout == hccl_env.DEFAULT_EXEC_TIMEOUT
    assert _problem(neg, "HCCL_EXEC_TIMEOUT")[0].message == \
        "Get env HCCL_EXEC_TIMEOUT less than 0, so reset it to the default value."
    zero = read({"HCCL_EXEC_TIMEOUT": "0"})
    assert zero.exec_timeout == 0 and _problem(zero, "HCCL_EXEC_TIMEOUT")[0].severity == WARNING
    assert read({"HCCL_EXEC_TIMEOUT": "12"}).exec_timeout == 12


def test_exec_timeout_text_is_read_by_its_leading_digits():
    env = read({"HCCL_EXEC_TIMEOUT": "30m"})
    assert env.exec_timeout == 30
    assert "reads it as 30" in _problem(env, "HCCL_EXEC_TIMEOUT")[0].message


def test_connect_timeout_outside_hccls_range_is_an_error():
    env = read({"HCCL_CONNECT_TIMEOUT": "60"})
    problem = _problem(env, "HCCL_CONNECT_TIMEOUT")[0]
    assert problem.severity == ERROR and "[120, 7200]" in problem.message
    assert read({"HCCL_CONNECT_TIMEOUT": "600"}).connect_timeout == 600


def test_event_timeout_not_above_exec_timeout_gets_torch_npus_warning():
    env = read({"HCCL_EXEC_TIMEOUT": "600", "HCCL_EVENT_TIMEOUT": "300"})
    assert _problem(env, "HCCL_EVENT_TIMEOUT")[0].message == \
        "The value of HCCL_EVENT_TIMEOUT:300 is less than or equal to the value of HCCL_EXEC_TIMEOUT:600."
    assert not _problem(read({"HCCL_EXEC_TIMEOUT": "600", "HCCL_EVENT_TIMEOUT": "700"}), "HCCL_EVENT_TIMEOUT")


def test_buffsize_must_be_positive():
    env = read({"HCCL_BUFFSIZE": "0"})
    assert env.buffsize_mb == 200
    assert _problem(env, "HCCL_BUFFSIZE")[0].message == "HCCL_BUFFSIZE should be positive."
    assert read({"HCCL_BUFFSIZE": "64"}).buffsize_mb == 64


def test_if_ip_must_be_an_address_and_takes_precedence_over_the_interface():
    bad = read({"HCCL_IF_IP": "10.0.0.300"})
    assert bad.if_ip is None and _problem(bad, "HCCL_IF_IP")[0].severity == ERROR
    both = read({"HCCL_IF_IP": "10.0.0.11", "HCCL_SOCKET_IFNAME": "eth0"})
    assert both.if_ip == "10.0.0.11" and _problem(both, "HCCL_SOCKET_IFNAME")[0].severity == INFO
    assert read({"HCCL_IF_IP": "fe80::1"}).if_ip == "fe80::1"


def test_rank_table_file_is_used_only_when_torch_npu_would(tmp_path):
    table = tmp_path / "rank_table.json"
    table.write_text("{}")
    link = tmp_path / "link.json"
    os.symlink(table, link)
    used = read({"RANK_TABLE_FILE": str(table), "HCCL_CONNECT_TIMEOUT": "300"})
    assert used.rank_table_file == str(table) and used.problems == ()
    short = read({"RANK_TABLE_FILE": str(table)})
    assert "300 seconds or more" in _problem(short, "HCCL_CONNECT_TIMEOUT")[0].message
    for path, why in ((link, "symbolic link"), (tmp_path / "missing.json", "does not exist")):
        env = read({"RANK_TABLE_FILE": str(path)})
        assert env.rank_table_file is None
        assert why in _problem(env, "RANK_TABLE_FILE")[0].message


def test_master_port_must_be_a_port():
    assert read({"MASTER_PORT": "29500"}).master_port == 29500
    assert _problem(read({"MASTER_PORT": "99999"}), "MASTER_PORT")[0].severity == ERROR
