"""scan_text / read_log on log excerpts written for these tests (fixtures/logs/)."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ascend_compat.errors.logscan import LogReadError, read_log, scan_text

LOGS = Path(__file__).parent / "fixtures" / "logs"


def scan(name):
    return {f.key: f for f in scan_text(read_log(str(LOGS / name)))}


def test_vector_core_exception_log():
    found = scan("vector_core_507035.log")
    assert list(found) == ["507035", "ERR00100", "EZ9999", "async_trace"]
    assert found["507035"].count == 3  # "error code:", "error code is", "runtime result ="
    assert "vector core" in found["507035"].meaning
    assert found["EZ9999"].count == 2 and found["EZ9999"].first_line == 14
    assert "EZ9999: Inner Error!" in found["EZ9999"].excerpt
    assert any("ASCEND_LAUNCH_BLOCKING=1" in f for f in found["async_trace"].fixes)


def test_cpu_fallback_ops_and_counts():
    found = scan("cpu_fallback.log")
    fb = found["cpu_fallback"]
    assert fb.details["ops"] == {"aten::isin.Tensor_Tensor_out": 3, "aten::_unique2": 1, "aten::histc": 1}
    assert fb.count == 5 and "3 op(s)" in fb.title
    assert "aten::isin.Tensor_Tensor_out (3x)" in fb.to_text()


def test_hccl_timeout_log():
    found = scan("hccl_timeout.log")
    assert {"hccl_timeout", "EI0002", "507048", "hccl:9", "ERR02200"} <= set(found)
    assert found["hccl:9"].title == "HCCL_E_TIMEOUT"  # small number on an HCCL line = HcclResult
    assert any("HCCL_EXEC_TIMEOUT" in h for h in found["hccl_timeout"].helps)


@pytest.mark.parametrize("log,keys", [
    ("fork.log", {"fork_after_init"}),
    ("oom.log", {"npu_oom"}),
    ("device_mismatch.log", {"device_mismatch", "ERR01002"}),
    ("visible_devices.log", {"207004", "ERR00100", "EE1001", "visible_devices"}),
    ("cuda_leftovers.log", {"cuda_not_compiled", "nccl_missing", "backend_autoload"}),
    ("clean.log", set()),
])
def test_patterns(log, keys):
    assert set(scan(log)) == keys


def test_fork_fix_says_spawn():
    f = scan("fork.log")["fork_after_init"]
    assert any("spawn" in x for x in f.fixes)


def test_hex_and_zero_are_not_codes():
    text = "error code = 0x800000\nretCode=0x31\nerror code is 0\nruntime result = 0\n"
    assert scan_text(text) == []


def test_fallback_disabled_message():
    line = ("RuntimeError: The operator 'aten::histc' would execute its main computation on CPU through dispatcher "
            "backend fallback, but CPU fallback is disabled by TORCH_NPU_FALLBACK_CPU_DISABLE=1.\n"
            "[ERROR] 2026-11-21-11:02:09 (PID:1, Device:0, RankID:-1) ERR01007 OPS feature not supported")
    found = {f.key: f for f in scan_text(line)}
    assert found["cpu_fallback_disabled"].details["ops"] == {"aten::histc": 1}
    assert "ERR01007" in found


def test_read_errors(tmp_path):
    with pytest.raises(LogReadError, match="no such file"):
        read_log(str(tmp_path / "missing.log"))
    with pytest.raises(LogReadError, match="is a directory"):
        read_log(str(tmp_path))
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(b"error code is 507035\n" * 100))
    with pytest.raises(LogReadError, match="binary|UTF-8"):
        read_log(str(gz))
    latin = tmp_path / "latin.log"
    latin.write_bytes(bytes(range(0x80, 0x100)) * 40)
    with pytest.raises(LogReadError, match="UTF-8"):
        read_log(str(latin))


def test_mostly_text_with_a_bad_byte_is_read(tmp_path):
    p = tmp_path / "x.log"
    p.write_bytes(b"step 1\n\xff\nerror code is 207018\n")
    assert [f.key for f in scan_text(read_log(str(p)))] == ["207018"]


def test_nul_bytes_only_are_binary_even_as_an_endless_stream(tmp_path):
    """A file or stream of nothing but NUL bytes is binary (``error --log /dev/zero`` never returned);
    a text followed by an endless run of NULs stops after MAX_NUL_RUN, while the padding that
    crash-truncated plog files end in is still read."""
    import os

    from ascend_compat.errors import logscan

    zeros = tmp_path / "zeros.log"
    zeros.write_bytes(b"\x00" * 100)
    with pytest.raises(LogReadError, match="nothing but 100 bytes of NUL"):
        read_log(str(zeros))
    if os.path.exists("/dev/zero"):
        with pytest.raises(LogReadError, match="looks binary"):
            read_log("/dev/zero")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: some text, then NULs until the reader closes the pipe
        os.close(r)
        try:
            os.write(w, b"error code is 507035\n")
            block = b"\x00" * (1 << 20)
            while True:
                os.write(w, block)
        finally:
            os._exit(0)
    os.close(w)
    try:
        with pytest.raises(LogReadError, match="after its text, over"):
            read_log(f"/dev/fd/{r}")
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    padded = tmp_path / "plog.log"
    padded.write_bytes(b"error code is 507035\n" + b"\x00" * (logscan.BLOCK * 2))
    assert [f.key for f in scan_text(read_log(str(padded)))] == ["507035"]
