"""torch_npu's own SDPA kernel on the simulated NPU (simulator/torch_npu/fused/sdpa.py): which branch
it takes under which conditions, its errors, ``_fused_sdp_choice``, its autograd through
``npu_fusion_attention``'s backward formula, and results equal to the CPU's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend
from torch.utils._python_dispatch import TorchDispatchMode

from _recording_mode import RecordingMode
from _subproc import check, run_python


def _qkv(q_shape, kv_shape=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    kv_shape = kv_shape or q_shape
    return tuple(torch.randn(*s, generator=g).to(dtype) for s in (q_shape, kv_shape, kv_shape))


def _branch(q, k, v, **kw):
    """Run SDPA on npu copies and say which branch ran: ``fusion`` when npu_fusion_attention did."""
    with RecordingMode() as ops:
        F.scaled_dot_product_attention(*(t.to("npu") for t in (q, k, v)), **kw)
    return "fusion" if "npu.npu_fusion_attention.default" in ops.ops else "math"


def _mask(shape, dtype=torch.bool, seed=1):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g)
    return (m > 0.3) if dtype == torch.bool else m.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_float_dtypes_take_the_fusion_branch_float64_takes_math(dtype):
    assert _branch(*_qkv((2, 4, 6, 16), dtype=dtype)) == "fusion"
    assert _branch(*_qkv((2, 4, 6, 16), dtype=torch.float64)) == "math"


def test_mask_kind_and_rank_pick_the_branch():
    q, k, v = _qkv((2, 4, 6, 8), (2, 4, 9, 8))
    assert _branch(q, k, v, attn_mask=_mask((6, 9)).to("npu")) == "fusion"  # bool SS
    assert _branch(q, k, v, attn_mask=_mask((2, 1, 6, 9)).to("npu")) == "fusion"  # bool B1SS
    assert _branch(q, k, v, attn_mask=_mask((1, 6, 9)).to("npu")) == "math"  # bool, 3 dims
    assert _branch(q, k, v, attn_mask=_mask((6, 9), torch.float32).to("npu")) == "math"  # additive float
    assert _branch(q, k, v, is_causal=True) == "fusion"
    assert _branch(q, k, v, dropout_p=0.5) == "fusion"


def test_shape_limits_pick_the_branch():
    assert _branch(*_qkv((4, 6, 8))) == "math"  # 3-D inputs
    assert _branch(*_qkv((1, 2, 3, 512))) == "fusion"
    assert _branch(*_qkv((1, 2, 3, 513))) == "math"  # head dim above 512
    assert _branch(*_qkv((1, 256, 2, 4), (1, 1, 2, 4))) == "fusion"
    # up to 2048 heads go to npu_fusion_attention, which documents (and enforces) at most 256
    with pytest.raises(RuntimeError, match="npu_fusion_attention: head_num 2048 exceeds the supported range 1~256"):
        _branch(*_qkv((1, 2048, 2, 4)))
    assert _branch(*_qkv((1, 2049, 2, 4))) == "math"  # more than 2048 heads
    assert _branch(*_qkv((1, 4, 3, 8), (1, 2, 3, 8))) == "fusion"  # GQA, no enable_gqa needed


def test_fusion_call_arguments_follow_torch_npu():
    calls = []

    class Args(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func) == "npu.npu_fusion_attention.default":
                names = [a.name for a in func._schema.arguments]
                calls.append({**dict(zip(names, args)), **(kwargs or {})})
            return func(*args, **(kwargs or {}))

    q, k, v = (t.to("npu") for t in _qkv((2, 4, 6, 16)))
    with Args():
        F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.25)
        F.scaled_dot_product_attention(q, k, v, attn_mask=_mask((6, 6)).to("npu"), scale=0.5)
    kw, kw2 = calls
    assert (kw["head_num"], kw["input_layout"]) == (4, "BNSD")
    causal = kw["atten_mask"]
    assert causal.shape == (2048, 2048) and torch.equal(causal.cpu(), torch.ones(2048, 2048, dtype=torch.bool).triu(1))
    assert (kw["sparse_mode"], kw["next_tockens"], kw["keep_prob"]) == (2, 0, 0.75)
    assert kw["scale"] == pytest.approx(0.25)  # 1/sqrt(16)
    assert torch.equal(kw2["atten_mask"].cpu(), ~_mask((6, 6)))  # True = masked out on the NPU
    assert (kw2.get("sparse_mode", 0), kw2.get("next_tockens", 2147483647), kw2["scale"]) == (0, 2147483647, 0.5)


@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "gqa", "3d"])
def test_forward_and_backward_match_the_cpu(case):
    kv = (2, 2, 9, 8) if case == "gqa" else (2, 4, 9, 8)
    q, k, v = _qkv((2, 4, 9, 8), kv) if case != "3d" else _qkv((4, 9, 8))
    kw = {"causal": {"is_causal": True}, "bool_mask": {"attn_mask": _mask((2, 1, 9, 9))},
          "float_mask": {"attn_mask": _mask((9, 9), torch.float32)}, "gqa": {"enable_gqa": True}}.get(case, {})
    results = []
    for dev in ("cpu", "npu"):
        leaves = [t.detach().to(dev).requires_grad_() for t in (q, k, v)]
        args = {n: (a.to(dev) if isinstance(a, torch.Tensor) else a) for n, a in kw.items()}
        out = F.scaled_dot_product_attention(*leaves, **args)
        out.square().sum().backward()
        results.append([out.detach().cpu()] + [t.grad.cpu() for t in leaves])
    for got, want in zip(results[1], results[0]):
        torch.testing.assert_close(got, want, atol=2e-5, rtol=2e-5)


def test_backward_runs_the_grad_op_once():
    q, k, v = (t.to("npu").requires_grad_() for t in _qkv((2, 4, 6, 8)))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with RecordingMode() as ops:
        out.sum().backward()
    assert ops.ops.count("npu.npu_fusion_attention_grad.default") == 1
    assert not any(name.startswith("aten.bmm") or name.startswith("aten.matmul") for name in ops.ops)
    assert all(t.grad is not None and t.grad.shape == t.shape for t in (q, k, v))


def test_dropout_drops_and_is_seeded_by_the_npu_generator():
    q, k, v = (t.to("npu") for t in _qkv((1, 2, 16, 8)))
    full = F.scaled_dot_product_attention(q, k, v)
    torch.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert torch.equal(a, b) and not torch.allclose(a, full)


def test_errors_worded_like_torch_npu():
    q, k, v = (t.to("npu") for t in _qkv((1, 2, 3, 4)))
    with pytest.raises(RuntimeError, match=r"same dtype, but got query.dtype: float key.dtype: c10::Half.*\n.*ERR01007"):
        F.scaled_dot_product_attention(q, k.half(), v)
    with pytest.raises(RuntimeError, match=r"(?s)attn_mask dtype to be bool or to match query dtype.*long int.*ERR01007"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 3, dtype=torch.int64, device="npu"))
    with pytest.raises(RuntimeError, match=r"^The attn_mask should be none when is_causal is true, but got 1-value$"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 3, dtype=torch.bool, device="npu"),
                                       is_causal=True)


def test_fused_sdp_choice_is_overrideable_for_every_input_on_npu_only():
    q, k, v = _qkv((1, 2, 3, 8))
    cpu = torch._fused_sdp_choice(q, k, v)
    assert cpu != SDPBackend.OVERRIDEABLE.value
    for dtype in (torch.float32, torch.float16, torch.float64):
        n = [t.to("npu", dtype) for t in (q, k, v)]
        assert torch._fused_sdp_choice(*n) == SDPBackend.OVERRIDEABLE.value == 4
        assert torch._fused_sdp_choice(*n, attn_mask=torch.zeros(3, 3, device="npu", dtype=dtype),
                                       dropout_p=0.3) == 4
    assert torch._fused_sdp_choice(*(t.to("npu") for t in _qkv((1, 2, 3, 1024)))) == 4


def test_older_soc_takes_math_and_dtensor_rules_wait_for_dtensor():
    out = check(run_python("""
        import sys
        import torch, torch.nn.functional as F
        import ascend_compat.simulator as sim
        sim.install(soc="Ascend910A")
        from ascend_compat.simulator.torch_npu.fused import sdpa
        q = torch.randn(1, 2, 3, 8, device="npu")
        print("branch", sdpa.path(q, q, q))
        print("dtensor loaded at install", "torch.distributed.tensor" in sys.modules)
        from torch.distributed.tensor import DTensor
        handlers = DTensor._op_dispatcher._custom_op_handlers
        print("handled", sorted(str(op) for op in handlers if str(op).startswith("npu.")))
    """))
    assert "branch math" in out
    assert "dtensor loaded at install False" in out
    assert "handled ['npu.npu_fusion_attention.default', 'npu.npu_fusion_attention_grad.default']" in out


def test_dropout_with_a_64_bit_seed():
    """torch.seed() may leave a seed above 2**63; the op still returns it as a schema int (int64)."""
    q, k, v = (t.to("npu") for t in _qkv((1, 2, 4, 8)))
    saved = torch.npu.get_rng_state()
    try:
        torch.npu.manual_seed(2**64 - 5)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
        assert out.shape == q.shape
        res = torch.ops.npu.npu_fusion_attention(q, k, v, 2, "BNSD", keep_prob=0.5)
        assert res[4] == -5
    finally:
        torch.npu.set_rng_state(saved)
