"""bitsandbytes stand-in: 8-bit optimizers map to torch optimizers (one warning), quantized layers and
functions refuse with a message naming what works on Ascend."""
from __future__ import annotations

import warnings

import pytest
import torch

from _dropin_subproc import ok, run

from ascend_compat.ecosystem.dropins import bitsandbytes as bnb


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    ps = [torch.randn(4, 3, generator=g).requires_grad_(True), torch.randn(3, generator=g).requires_grad_(True)]
    for p in ps:
        p.grad = torch.randn(p.shape, generator=g)
    return ps


def test_adamw8bit_is_torch_adamw_with_bnb_defaults_and_warns_once():
    bnb._warned.clear()
    a, b = _params(), _params()
    with pytest.warns(UserWarning, match="torch.optim.AdamW.*8 bytes per parameter"):
        opt = bnb.optim.AdamW8bit(a, lr=1e-2, betas=(0.8, 0.99), optim_bits=8, min_8bit_size=4096, is_paged=True)
    assert isinstance(opt, torch.optim.AdamW)
    assert opt.defaults["weight_decay"] == 1e-2  # bitsandbytes' AdamW default
    ref = torch.optim.AdamW(b, lr=1e-2, betas=(0.8, 0.99), weight_decay=1e-2)
    for _ in range(2):
        opt.step()
        ref.step()
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bnb.optim.AdamW8bit(_params())  # the warning is shown once per class


@pytest.mark.filterwarnings("ignore:bitsandbytes.optim")
def test_positional_arguments_and_other_optimizers():
    opt = bnb.optim.Adam8bit(_params(), 0.5, (0.7, 0.9))
    assert isinstance(opt, torch.optim.Adam) and opt.defaults["lr"] == 0.5 and opt.defaults["betas"] == (0.7, 0.9)
    assert opt.defaults["weight_decay"] == 0.0
    assert isinstance(bnb.optim.PagedAdamW8bit(_params()), torch.optim.AdamW)
    assert isinstance(bnb.optim.SGD8bit(_params(), lr=0.1, momentum=0.9), torch.optim.SGD)
    assert isinstance(bnb.optim.RMSprop8bit(_params()), torch.optim.RMSprop)
    with pytest.raises(NotImplementedError, match="percentile_clipping"):
        bnb.optim.AdamW8bit(_params(), percentile_clipping=5)


def test_quantized_layers_and_functions_refuse_clearly():
    with pytest.raises(NotImplementedError, match="Linear4bit.*NF4 4-bit.*bitsandbytes-npu-beta"):
        bnb.nn.Linear4bit(16, 16)
    with pytest.raises(NotImplementedError, match="Linear8bitLt.*npu_weight_quant_batchmatmul"):
        bnb.nn.Linear8bitLt(16, 16, has_fp16_weights=False)
    with pytest.raises(NotImplementedError, match="quantize_4bit"):
        bnb.functional.quantize_4bit(torch.zeros(4))
    with pytest.raises(NotImplementedError, match="LLM.int8|bitsandbytes.matmul"):
        bnb.matmul(torch.zeros(2, 2), torch.zeros(2, 2))


def test_script_importing_bitsandbytes_trains_under_dropins():
    out = ok(run("""
        import warnings
        import torch, ascend_compat
        from ascend_compat.ecosystem.dropins import _finder as _modules
        _modules.install()
        import bitsandbytes as bnb
        model = torch.nn.Linear(4, 1).cuda()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = bnb.optim.AdamW8bit(model.parameters(), lr=0.1)
        x = torch.randn(32, 4).cuda(); y = x.sum(1, keepdim=True)
        first = None
        for _ in range(30):
            loss = torch.nn.functional.mse_loss(model(x), y)
            first = first if first is not None else loss.item()
            opt.zero_grad(); loss.backward(); opt.step()
        print("RESULT", type(opt).__mro__[1].__name__, len(caught), first > loss.item() * 2, model.weight.device)
    """, ASCEND_COMPAT_SIMULATE="1"))
    assert "RESULT AdamW 1 True npu:0" in out
