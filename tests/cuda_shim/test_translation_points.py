"""Device arguments at the API boundaries listed in the issue (factories, Tensor/Module methods,
AMP, streams, SDPA contexts, FSDP, the launcher's -m form)."""
from __future__ import annotations

import sys

import pytest
import torch

from shim_helpers import REPO, clean_env

pytestmark = pytest.mark.usefixtures("shim")


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, device="cuda"), lambda: torch.ones(2, device="cuda:0"),
    lambda: torch.empty(2, device=torch.device("cuda")), lambda: torch.full((2,), 1.0, device="cuda"),
    lambda: torch.arange(3, device="cuda"), lambda: torch.linspace(0, 1, 3, device="cuda"),
    lambda: torch.eye(2, device="cuda"), lambda: torch.randperm(4, device="cuda"),
    lambda: torch.tensor([1, 2], device="cuda"), lambda: torch.as_tensor([1.0], device="cuda"),
    lambda: torch.zeros_like(torch.ones(2), device="cuda"), lambda: torch.rand_like(torch.ones(2), device="cuda"),
    lambda: torch.empty_strided((2,), (1,), device="cuda"), lambda: torch.empty_permuted((2, 3), (1, 0), device="cuda"),
    lambda: torch.ones(2).new_zeros(3, device="cuda"), lambda: torch.ones(2).new_full((2,), 3.0, device="cuda"),
    lambda: torch.ones(2).new_tensor([1.0], device="cuda"), lambda: torch.ones(2).new_empty(2, device="cuda"),
    lambda: torch.ones(2).to(device="cuda"), lambda: torch.ones(2).to("cuda", torch.float16),
    lambda: torch.ones(2).cuda(0), lambda: torch.ones(2).cuda("cuda:0"), lambda: torch.ones(2).to(torch.ones(1, device="cuda")),
    lambda: torch.hann_window(4, device="cuda"), lambda: torch.tril_indices(3, 3, device="cuda"),
])
def test_factories_and_tensor_methods(make):
    assert make().device.type == "npu"


def test_module_to_and_to_empty():
    m = torch.nn.Linear(2, 2).to("cuda:0")
    assert m.weight.device == torch.device("npu:0")
    with torch.device("meta"):
        lazy = torch.nn.Linear(2, 2)
    lazy.to_empty(device="cuda")
    assert lazy.weight.device.type == "npu"
    assert torch.nn.Linear(2, 2).to(0).weight.device.type == "npu"


def test_pin_memory_with_cuda_device():
    assert torch.ones(2).pin_memory().is_pinned()


def test_arbitrary_string_arguments_untouched(tmp_path):
    path = tmp_path / "cuda_weights.pt"
    torch.save(torch.ones(1), str(path))
    assert torch.load(str(path)).tolist() == [1.0]


def test_amp_surface():
    assert torch.amp.GradScaler("cuda")._device == "npu"
    assert torch.amp.GradScaler()._device == "npu"  # the default device of GradScaler is "cuda"
    assert torch.amp.is_autocast_available("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("cuda") and torch.is_autocast_enabled()
        assert torch.get_autocast_dtype("cuda") == torch.bfloat16
    assert not torch.is_autocast_enabled("cuda")

    class Mul(torch.autograd.Function):
        @staticmethod
        @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
        def forward(ctx, a):
            return a * 2

        @staticmethod
        @torch.cuda.amp.custom_bwd
        def backward(ctx, g):
            return g * 2

    x = torch.ones(2, device="cuda", requires_grad=True)
    with torch.autocast("cuda"):
        y = Mul.apply(x.half())
    assert y.dtype == torch.float32
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_grad_scaler_step_on_npu():
    model = torch.nn.Linear(2, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        loss = model(torch.ones(4, 2, device="cuda")).float().sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() > 0


def test_generic_stream_and_event():
    s = torch.Stream(device="cuda")
    assert s.device.type == "npu" and isinstance(s, torch.Stream)


def test_sdpa_backend_contexts_are_accepted():
    q = torch.randn(1, 2, 4, 8, device="cuda")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        out = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.device.type == "npu"
    torch.backends.cuda.enable_flash_sdp(True)
    assert torch.backends.cuda.flash_sdp_enabled()


def test_fsdp_patch_waits_for_its_module():
    import torch.distributed.fsdp as fsdp

    assert hasattr(fsdp.FullyShardedDataParallel.__init__, "__wrapped__")


def test_random_rng_helpers_with_cuda_device():
    with torch.random.fork_rng(devices=[0], device_type="cuda"):
        torch.cuda.manual_seed(3)
        torch.randn(2, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(1)
    assert torch.randn(2, device="cuda", generator=g).device.type == "npu"


def test_launcher_module_form(tmp_path):
    import subprocess

    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(
        "import sys, torch\n"
        "assert __name__ == '__main__'\n"
        "print('RESULT', torch.ones(1).cuda().device, sys.argv[1:], torch.cuda.device_count())\n")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", "-m", "mypkg.train", "--x", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=clean_env(ASCEND_COMPAT_SIM_DEVICES="3", CUDA_VISIBLE_DEVICES="1,2",
                                        PYTHONPATH=str(REPO / "src")))
    assert proc.returncode == 0, proc.stderr
    assert "RESULT npu:0 ['--x', '1'] 2" in proc.stdout  # CUDA_VISIBLE_DEVICES applied before the backend
