"""errors.plog (CANN's plog line format, file names, layout) and errors.hccl_text (HCCL's messages): what
the simulator writes is what the diagnosis reads."""
from __future__ import annotations

import os
import time

from ascend_compat.errors import hccl_text, plog, torch_npu_text


def test_line_format_round_trips_to_the_microsecond():
    when = time.mktime((2026, 3, 4, 5, 6, 7, 0, 0, -1)) + 0.123456
    line = plog.format_line("ERROR", "HCCL", 4242, "python3", when, "op_base.cc:10", "[4242]something failed")
    assert line.startswith("[ERROR] HCCL(4242,python3):2026-03-04-05:06:07.123.456 [op_base.cc:10][4242]")
    rec = plog.parse_line(line)
    assert (rec.level, rec.module, rec.pid, rec.pname) == ("ERROR", "HCCL", 4242, "python3")
    assert abs(rec.time - when) < 1e-6 and rec.text.endswith("something failed")
    assert plog.parse_line("[WARN]RUNTIME(1,x):2026-03-04-05:06:07.000.001 [a.cc:1]y").level == "WARNING"
    assert plog.parse_line("not a plog line") is None


def test_file_names_and_layout(tmp_path):
    assert plog.is_plog_name("plog-2111667_20251024111652406.log") == 2111667
    assert plog.is_plog_name("device-77_20251024111652406.log") == 77
    assert plog.is_plog_name("plog.log") is None
    assert plog.log_root({"ASCEND_PROCESS_LOG_PATH": str(tmp_path)}) == str(tmp_path)
    assert plog.log_root({}).endswith(os.path.join("ascend", "log"))
    writer = plog.PlogWriter(str(tmp_path), pid=77, pname="python3")
    writer.write("ERROR", "HCCL", "x.cc:1", "debug line")
    writer.write("INFO", "HCCL", "x.cc:2", "run line", run=True)
    writer.close()
    debug = list((tmp_path / "debug" / "plog").iterdir())
    run = list((tmp_path / "run" / "plog").iterdir())
    assert len(debug) == len(run) == 1 and plog.is_plog_name(debug[0].name) == 77
    assert "debug line" in debug[0].read_text() and "run line" in run[0].read_text()


def test_hccl_messages_are_recognised_by_their_readers():
    setup = hccl_text.setup_line(4, 3, "node0%sim_1_0_2", "node1%eth0", 1, 1, "0.0.0.0")
    m = hccl_text.SETUP.search(setup)
    assert m.groups()[:5] == ("4", "3", "node0%sim_1_0_2", "node1%eth0", "1")
    lines = hccl_text.task_exception_lines(2, 9, "AllReduce_id", 3, "id", 4, 0, "2")
    assert hccl_text.NOTIFY_BASE.search(lines[0]).group(1) == "AllReduce_id"
    assert hccl_text.GROUP_RANK.search(lines[1]).groups() == ("id", "4", "0")
    assert hccl_text.REMOTE_RANK.search(lines[2]).group(1) == "2"
    claim = hccl_text.cluster_exception("node1/0", time.time(), "node0/0", hccl_text.HEARTBEAT_LOST)
    assert hccl_text.CLUSTER.search(claim).group(1, 3, 4) == ("node1/0", "node0/0", "Heartbeat Lost Occurred")
    ei = hccl_text.notify_timeout(12, "3", "AllReduce_id", 2, 9, [claim])
    assert hccl_text.EI0002.search(ei.replace("\n", " ")).group(1) == "3"
    assert "there are(is) 1 abnormal device(s)" in ei
    mismatch = hccl_text.inconsistent("AllReduce_id", "count", 16, 7)
    assert hccl_text.EI0005.search(mismatch).groups() == ("AllReduce_id", "count", "16", "7")
    assert hccl_text.CHECK_FAIL.search(hccl_text.check_fail_line("count", 16, 7)).groups() == ("count", "16", "7")
    dog = hccl_text.watchdog(3, 12, "allreduce", 8, 1000, 1002)
    assert hccl_text.WATCHDOG.search(dog).groups() == ("3", "12", "ALLREDUCE")


def test_torch_npu_suffix_round_trips():
    when = time.mktime((2026, 1, 2, 3, 4, 5, 0, 0, -1))
    line = torch_npu_text.suffix(99, 3, 5, "ERR02200", "DIST", "call hccl api failed", when)
    assert torch_npu_text.parse_suffix("prefix " + line) == (when, 99, 3, 5, "ERR02200")
    text = torch_npu_text.npu_function_error("f:file.cpp:1", "Call()", 507048, "\n" + line, "EI0002: ...")
    assert "error code is 507048" in text and "[Error]: The execution of the internal task times out." in text
