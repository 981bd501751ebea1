"""xformers drop-in: memory_efficient_attention vs a float64 reference built from each bias's
``materialize()`` (and, for the causal masks, from the documented alignment), on the simulated NPU."""
from __future__ import annotations

import math

import pytest
import torch

from ascend_compat import simulator

if not simulator.is_installed():
    simulator.install()

from ascend_compat.ecosystem.dropins import xformers as xops  # noqa: E402
from ascend_compat.ecosystem.dropins.xformers import attn_bias as ab  # noqa: E402

ATOL = {torch.float16: 3e-3, torch.bfloat16: 2.5e-2, torch.float32: 2e-5}


def reference(q, k, v, bias=None, scale=None):
    """float64 attention on [B, M, H, K] with an additive [.., Mq, Mk] bias; empty rows give 0."""
    q, k, v = (t.detach().cpu().double() for t in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if bias is not None:
        s = s + bias.cpu().double()
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return torch.einsum("bhqk,bkhd->bqhd", p, v)


def make(b, mq, mk, h, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, m, h, k, generator=g).to(dtype).to("npu") for m in (mq, mk, mk)]


def close(a, b, atol, what):
    diff = (a.detach().cpu().double() - b).abs().max().item()
    assert diff <= atol, f"{what}: {diff}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("bias_name", ["none", "lower_tri", "lower_tri_bottom_right", "local", "tensor",
                                       "lower_tri_tensor"])
def test_memory_efficient_attention_biases(bias_name, dtype):
    b, mq, mk, h, k = 2, 5, 8, 3, 16
    q, kk, v = make(b, mq, mk, h, k, dtype)
    g = torch.Generator().manual_seed(5)
    tensor_bias = torch.randn(b, h, mq, mk, generator=g)
    bias = {"none": None, "lower_tri": ab.LowerTriangularMask(),
            "lower_tri_bottom_right": ab.LowerTriangularFromBottomRightMask(),
            "local": ab.LocalAttentionFromBottomRightMask(2, 1), "tensor": tensor_bias.to(dtype).to("npu"),
            "lower_tri_tensor": ab.LowerTriangularMask().add_bias(tensor_bias.to(dtype).to("npu"))}[bias_name]
    out = xops.memory_efficient_attention(q, kk, v, attn_bias=bias)
    assert out.shape == q.shape and out.dtype == dtype
    if bias is None:
        dense = None
    elif isinstance(bias, torch.Tensor):
        dense = bias.cpu().double()
    else:
        dense = bias.materialize((b, h, mq, mk), dtype=torch.float64)
    close(out, reference(q, kk, v, dense), ATOL[dtype] * (4 if "tensor" in bias_name else 1), bias_name)


def test_mask_alignment_is_as_documented():
    top_left = ab.LowerTriangularMask().materialize((2, 4))
    bottom_right = ab.LowerTriangularFromBottomRightMask().materialize((2, 4))
    assert torch.isinf(top_left).tolist() == [[False, True, True, True], [False, False, True, True]]
    assert torch.isinf(bottom_right).tolist() == [[False, False, False, True], [False, False, False, False]]


@pytest.mark.parametrize("causal", [None, "top_left", "bottom_right"])
def test_block_diagonal(causal):
    mask = ab.BlockDiagonalMask.from_seqlens([3, 4], [5, 2])
    if causal == "top_left":
        mask = mask.make_causal()
    elif causal == "bottom_right":
        mask = mask.make_causal_from_bottomright()
    q, k, v = make(1, 7, 7, 2, 8, torch.float32)
    out = xops.memory_efficient_attention(q, k, v, attn_bias=mask)
    dense = mask.materialize((1, 2, 7, 7), dtype=torch.float64)
    close(out, reference(q, k, v, dense), 2e-5, f"block diagonal {causal}")
    parts = mask.split(out)
    assert [p.shape[1] for p in parts] == [3, 4]


def test_layouts_scale_dropout_and_grad():
    q, k, v = make(2, 4, 6, 1, 8, torch.float32)
    out3 = xops.memory_efficient_attention(q[:, :, 0], k[:, :, 0], v[:, :, 0], scale=0.2)
    close(out3.unsqueeze(2), reference(q, k, v, scale=0.2), 2e-5, "BMK")
    q5, k5, v5 = (t.reshape(2, t.shape[1], 1, 1, 8).expand(2, t.shape[1], 1, 2, 8) for t in (q, k, v))
    out5 = xops.memory_efficient_attention(q5, k5, v5)
    assert out5.shape == (2, 4, 1, 2, 8)
    close(out5[:, :, 0, 1:2], reference(q, k, v), 2e-5, "BMGHK")
    qg = q.clone().requires_grad_(True)
    xops.memory_efficient_attention(qg, k, v, p=0.0).sum().backward()
    assert qg.grad is not None and qg.grad.shape == q.shape
    torch.manual_seed(0)
    dropped = xops.memory_efficient_attention(q, k, torch.ones_like(v), p=0.5)
    assert not torch.allclose(dropped.cpu(), torch.ones(dropped.shape))


def test_unsupported_bias_raises_clearly():
    class BlockDiagonalPaddedKeysMask(ab.AttentionBias):
        pass

    q, k, v = make(1, 3, 3, 1, 8, torch.float16)
    with pytest.raises(NotImplementedError, match="BlockDiagonalPaddedKeysMask.*scaled_dot_product_attention"):
        xops.memory_efficient_attention(q, k, v, attn_bias=BlockDiagonalPaddedKeysMask())
    with pytest.raises(ValueError, match="batch size 1"):
        xops.memory_efficient_attention(*make(2, 3, 3, 1, 8, torch.float16),
                                        attn_bias=ab.BlockDiagonalMask.from_seqlens([1, 2]))
