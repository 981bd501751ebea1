"""The plan's pure parts: OOM replay, batch-argument editing, the roofline, suggestions and reports."""
from __future__ import annotations

import pytest
import torch

from ascend_compat.knowledge.alloc_conf import parse
from ascend_compat.knowledge.soc_perf import perf
from ascend_compat.plan import PlanError, PlanResult, check_soc, report, roofline, search
from ascend_compat.plan._analyse import breakdown, live_at, replay_oom
from ascend_compat.plan._record import Alloc, OpRecord
from ascend_compat.plan.suggest import suggestions

MiB = 1 << 20
GiB = 1 << 30


def _alloc(i, nbytes, op="aten::mm", category=None):
    a = Alloc(i, nbytes, op, "Model.layers.0", "train.py:10", "forward", False, 0)
    a.category = category
    return a


def test_oom_replay_names_the_first_request_a_device_cannot_serve():
    a, b, c = _alloc(0, 30 * MiB), _alloc(1, 20 * MiB), _alloc(2, 30 * MiB, op="aten::bmm")
    events = [(a, 1), (b, 1), (b, -1), (c, 1)]
    assert replay_oom(events, parse(None), 100 * MiB, 0) is None
    msg, where = replay_oom(events, parse(None), 60 * MiB, 3)
    # c's 32 MiB segment does not fit next to a's 32 MiB, even after b's cached 22 MiB is released
    assert where is c and msg.startswith("NPU out of memory. Tried to allocate 32.00 MiB (NPU 3; 60.00 MiB total")


def test_live_memory_at_an_event_by_category():
    p, g, t = _alloc(0, 4096, category="parameters"), _alloc(1, 4096, category="gradients"), _alloc(2, 100)
    events = [(p, 1), (t, 1), (g, 1), (t, -1)]
    live = live_at(events, 2)
    assert {x.id for x in live} == {0, 1, 2}
    sizes = breakdown(live, lambda n: 512 * ((n + 32 + 511) // 512))
    assert sizes["parameters"] == 4608 and sizes["gradients"] == 4608 and sizes["temporaries"] == 512
    assert {x.id for x in live_at(events, 3)} == {0, 1}


def test_batch_argument_is_set_in_either_form_or_appended():
    assert search.with_value(["t.py", "--batch-size", "8", "--lr", "1"], "--batch-size", 32) == [
        "t.py", "--batch-size", "32", "--lr", "1"]
    assert search.with_value(["t.py", "--batch-size=8"], "--batch-size", 4) == ["t.py", "--batch-size=4"]
    assert search.with_value(["t.py"], "--bs", 2) == ["t.py", "--bs", "2"]
    assert search.current_value(["t.py", "--bs=16"], "--bs") == 16 and search.current_value(["t.py"], "--bs") is None


def test_roofline_bounds_and_collectives():
    soc = perf("Ascend910B3")
    mm = OpRecord("aten::mm", "", "forward", 2 * 4096 ** 3, 3 * 4096 * 4096 * 2, torch.bfloat16, matmul=True)
    t, kind = roofline.op_time(mm, soc)
    assert kind == "compute" and t == pytest.approx(2 * 4096 ** 3 / (soc.cube_fp16 * 0.7))
    add = OpRecord("aten::add", "", "forward", 4096 * 4096, 3 * 4096 * 4096 * 2, torch.bfloat16)
    assert roofline.op_time(add, soc)[1] == "memory"
    # ring all-reduce moves 2(n-1)/n of the buffer; a node of 8 uses HCCS, 16 ranks go over RoCE
    hccs = roofline.comm_time("allreduce", GiB, 8, soc)
    roce = roofline.comm_time("allreduce", GiB, 16, soc)
    assert hccs == pytest.approx(14 * soc.hccs_latency + 1.75 * GiB / (soc.hccs_bandwidth * 0.8))
    assert roce > 10 * hccs and roofline.comm_time("allreduce", GiB, 1, soc) == 0.0


def test_backward_collectives_overlap_backward_compute_and_the_optimizer_waits():
    soc = perf("Ascend910B3")

    def op(phase, seconds, comm=None):
        # a matmul of ``seconds`` at Cube peak, or an all-reduce over 8 ranks of about ``seconds``
        if comm:
            nbytes = int(seconds * soc.hccs_bandwidth * 0.8 * 8 / 14)
            return OpRecord("c10d::allreduce_", "", phase, 0, nbytes, torch.float32, comm="allreduce",
                            comm_bytes=nbytes, group=8, overlap=comm != "sync")
        return OpRecord("aten::mm", "", phase, int(seconds * soc.cube_fp16 * 0.7), 0, torch.bfloat16, matmul=True)

    def times(ops):
        return [roofline.op_time(o, soc)[0] for o in ops]

    fwd, bwd1, ar, bwd2, opt = (op("forward", 0.01), op("backward", 0.01), op("backward", 0.004, comm=True),
                                op("backward", 0.01), op("optimizer", 0.001))
    est = roofline.estimate([fwd, bwd1, ar, bwd2, opt], soc)
    f, b1, c, b2, o = times([fwd, bwd1, ar, bwd2, opt])
    # the all-reduce runs while the rest of the backward computes: hidden
    assert est["seconds"] == pytest.approx(f + b1 + b2 + o) and est["hidden"] == pytest.approx(c)
    assert est["by_kind"]["communication"] == pytest.approx(c)
    # issued at the end of the backward, it is exposed: the optimizer waits for it
    est = roofline.estimate([fwd, bwd1, bwd2, ar, opt], soc)
    assert est["seconds"] == pytest.approx(f + b1 + b2 + c + o) and est["hidden"] == pytest.approx(0, abs=1e-12)
    # longer than the compute left: the excess is exposed
    long_ar = op("backward", 0.025, comm=True)
    est = roofline.estimate([fwd, bwd1, long_ar, bwd2, opt], soc)
    assert est["seconds"] == pytest.approx(f + b1 + roofline.op_time(long_ar, soc)[0] + o)
    # a collective in the forward (an FSDP all-gather) blocks, and so does a synchronous one in the backward
    # (DeepSpeed ZeRO-1/2 without overlap_comm)
    est = roofline.estimate([op("forward", 0.004, comm=True), fwd, bwd1, opt], soc)
    assert est["hidden"] == pytest.approx(0, abs=1e-12)
    est = roofline.estimate([fwd, bwd1, op("backward", 0.004, comm="sync"), bwd2, opt], soc)
    assert est["seconds"] == pytest.approx(f + b1 + c + b2 + o) and est["hidden"] == pytest.approx(0, abs=1e-12)


def _result(live, world=1, fits=False):
    rank = {"rank": 0, "peak_allocated": sum(live.values()), "peak_reserved": int(sum(live.values()) * 1.1),
            "live_at_peak": live, "activation_blocks": {f"M.layers.{i}": live["activations"] // 4 for i in range(4)},
            "collectives": {}, "oom": None if fits else "NPU out of memory. Tried to allocate 1.00 GiB (...)",
            "oom_op": "aten::zeros_like", "oom_module": "", "oom_site": "train.py:72", "peak_op": "aten::mm",
            "peak_module": "M.layers.3.mlp", "peak_site": "train.py:60", "peak_phase": "backward",
            "step_time_s": 0.5, "time_by_kind": {"compute": 0.4, "memory": 0.1, "communication": 0.0},
            "time_by_module": {"M.layers": 0.45}, "mfu": 0.4, "timeline": [[0, GiB, 2 * GiB, "forward"],
                                                                          [5, 3 * GiB, 4 * GiB, "backward"]]}
    return PlanResult("Ascend910B3", world, 2, 60 * GiB, [rank], [0])


def test_suggestions_estimate_what_each_change_leaves():
    live = {"parameters": 28 * GiB, "gradients": 28 * GiB, "optimizer state": 56 * GiB, "activations": 8 * GiB,
            "temporaries": 4 * GiB, "communication buffers": 0}
    res = _result(live)
    by_name = {s["suggestion"]: s for s in suggestions(res)}
    fsdp8 = by_name["FSDP2 (fully_shard) or ZeRO-3 on 8 NPUs"]
    assert fsdp8["estimated_peak_allocated"] == pytest.approx(112 * GiB / 8 + 12 * GiB + 2 * (2 * GiB) // 8)
    assert fsdp8["fits"] and not by_name["half the micro-batch"]["fits"]
    assert by_name["DeepSpeed ZeRO-1 on 8 NPUs"]["estimated_peak_allocated"] == pytest.approx(
        56 * GiB + 7 * GiB + 12 * GiB)
    ckpt = by_name["activation checkpointing of each block"]["estimated_peak_allocated"]
    assert 124 * GiB - 8 * GiB < ckpt < 124 * GiB


def test_reports_name_the_peak_the_oom_and_draw_the_timeline():
    res = _result({"parameters": GiB, "gradients": 0, "optimizer state": 0, "activations": GiB, "temporaries": 0,
                   "communication buffers": 0})
    text = report.text(res)
    assert "does NOT fit" in text and "train.py:60" in text and "M.layers.3.mlp" in text
    assert "OOM at aten::zeros_like in (no module), train.py:72" in text and "MFU 40.0%" in text
    page = report.timeline_html(res)
    assert page.startswith("<!doctype html>") and page.count("<polyline") == 2
    doc = res.to_dict(timeline=False)
    assert doc["fits"] is False and doc["ranks"][0]["peak_site"] == "train.py:60" and "timeline" not in doc["ranks"][0]
    for key in ("fits", "device_memory", "step_time_s", "oom"):
        assert key in doc


def test_unknown_soc_is_a_usage_error():
    with pytest.raises(PlanError, match="unknown SoC 'Ascend999'") as e:
        check_soc("Ascend999")
    assert e.value.code == 2
    assert check_soc(None) == "Ascend910B3"
