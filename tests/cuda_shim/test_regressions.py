"""One regression test per transfer_to_npu fault listed in the issue ("Why"), each showing we do
not repeat it."""
from __future__ import annotations

import sys
import warnings

import pytest
import torch

from shim_helpers import run_python

pytestmark = pytest.mark.usefixtures("shim")


def test_file_names_containing_cuda_are_not_rewritten(tmp_path):
    """transfer_to_npu: torch.load("ckpt_cuda.pt") looks for ckpt_npu.pt."""
    path = tmp_path / "ckpt_cuda.pt"
    torch.save({"w": torch.arange(3.0, device="cuda")}, path)
    (tmp_path / "ckpt_npu.pt").write_bytes(b"not a checkpoint")  # would break if opened instead
    assert torch.load(str(path))["w"].tolist() == [0.0, 1.0, 2.0]
    assert torch.load(path, map_location={"cuda_version": "cpu"})["w"].device.type == "npu"


def test_cuda_saved_checkpoint_loads_onto_npu_by_default(tmp_path):
    """A checkpoint written on a CUDA machine (storage location tag "cuda:0") restores onto npu."""
    proc = run_python(f"""
        import torch, torch.serialization as ser
        # write a genuine CUDA-tagged checkpoint without CUDA: tag the storage location as torch does on GPUs
        ser.register_package(1, lambda obj: "cuda:0" if getattr(obj, "device", None) is not None
                             and obj.device.type == "cpu" else None, lambda s, loc: None)
        torch.save({{"w": torch.ones(2)}}, {str(tmp_path / "gpu.pt")!r})
    """)
    assert proc.returncode == 0, proc.stderr
    raw = (tmp_path / "gpu.pt").read_bytes()
    assert b"cuda:0" in raw
    sd = torch.load(tmp_path / "gpu.pt")
    assert sd["w"].device == torch.device("npu:0")
    assert torch.load(tmp_path / "gpu.pt", map_location="cpu")["w"].device.type == "cpu"
    assert torch.load(tmp_path / "gpu.pt", map_location=torch.device("cuda:0"))["w"].device.type == "npu"
    assert torch.load(tmp_path / "gpu.pt", map_location={"cuda:0": "cuda:0"})["w"].device.type == "npu"
    assert torch.load(tmp_path / "gpu.pt", map_location=lambda s, loc: None)["w"].device.type == "npu"


def test_torch_device_cuda_is_translated():
    """transfer_to_npu leaves torch.device("cuda") a cuda device."""
    assert torch.device("cuda").type == "npu"


def test_device_comparisons_work():
    """transfer_to_npu: x.device == torch.device('cuda:0') is False."""
    assert torch.ones(1, device="cuda").device == torch.device("cuda:0")


def test_cudnn_and_backends_cuda_are_handled():
    """transfer_to_npu leaves torch.backends.cudnn / .cuda alone; TF32 switches reach HF32."""
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    matmul = torch.npu.matmul
    torch.backends.cuda.matmul.allow_tf32 = True
    assert matmul.allow_hf32 is True
    torch.backends.cuda.matmul.allow_tf32 = False
    assert matmul.allow_hf32 is False
    conv = torch.npu.conv
    torch.backends.cudnn.allow_tf32 = False
    assert conv.allow_hf32 is False
    torch.backends.cudnn.allow_tf32 = True
    assert conv.allow_hf32 is True


def test_cuda_visible_devices_is_translated():
    """transfer_to_npu ignores CUDA_VISIBLE_DEVICES."""
    proc = run_python("""
        import os, ascend_compat, torch
        print(os.environ["ASCEND_RT_VISIBLE_DEVICES"], torch.cuda.device_count())
    """, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_SIM_DEVICES="4", CUDA_VISIBLE_DEVICES="2,0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0,2", "2"]
    assert "not ascending" in proc.stderr


def test_libraries_are_not_told_cuda_exists():
    """transfer_to_npu tells every library CUDA is available (only ~28 functions shielded)."""
    from ascend_compat.cuda_shim.mapping.libraries import LIBRARY_DETECTION_POINTS

    dists = {d for d, _, _ in LIBRARY_DETECTION_POINTS}
    assert {"transformers", "accelerate", "peft", "trl", "deepspeed", "lightning"} <= dists
    assert len(LIBRARY_DETECTION_POINTS) >= 28


def test_double_tensor_is_not_silently_float32():
    """transfer_to_npu maps torch.cuda.DoubleTensor to float32 without a word."""
    from ascend_compat.cuda_shim.dtype_manager import DTypePolicy, apply_dtype_policy

    try:
        t = torch.cuda.DoubleTensor([1.0])
    except Exception as exc:  # the backend refuses float64 loudly: acceptable, not silent
        assert "float64" in str(exc).lower() or "double" in str(exc).lower()
    else:
        assert t.dtype == torch.float64
    previous = apply_dtype_policy(DTypePolicy.WARN)
    try:
        with pytest.warns(RuntimeWarning, match="float64"):
            assert torch.cuda.DoubleTensor([1.0]).dtype == torch.float32
    finally:
        apply_dtype_policy(previous)


def test_jit_script_is_left_alone():
    """transfer_to_npu disables torch.jit.script for the whole process."""
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    scripted = torch.jit.script(f)
    assert isinstance(scripted, torch.jit.ScriptFunction)


def test_no_global_warning_filter_change_and_no_banner():
    proc = run_python("""
        import warnings, torch, numpy  # torch and numpy add their own filters at import
        before = list(warnings.filters)
        import ascend_compat
        torch.ones(1, device="cuda")
        assert warnings.filters == before
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr


def test_stale_bindings_are_reached():
    """transfer_to_npu: DataParallel's stale _get_available_device_type says "cuda"."""
    dp = sys.modules["torch.nn.parallel.data_parallel"]
    assert dp._get_available_device_type() == "npu"
    model = torch.nn.DataParallel(torch.nn.Linear(2, 2).cuda())
    assert model(torch.ones(3, 2, device="cuda")).device.type == "npu"


def test_nccl_comparisons_keep_working():
    """transfer_to_npu docs tell users to edit `== "nccl"` checks by hand."""
    from ascend_compat.cuda_shim.patches.distributed import HcclBackendName

    name = HcclBackendName("hccl")
    assert name == "nccl" and "nccl" == name and name == "hccl" and name == torch.distributed.Backend.NCCL
    assert name != "gloo" and not (name != "nccl")
    assert {name: 1}["hccl"] == 1 and str(name) == "hccl"


def test_capability_is_never_none():
    """transfer_to_npu: get_device_capability() is None, breaking `>= (8, 0)`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.cuda.get_device_capability() >= (8, 0)


def test_undo_exists():
    """transfer_to_npu is irreversible."""
    import ascend_compat

    assert ascend_compat.deactivate() > 0
    assert torch.device("cuda").type == "cuda"
    ascend_compat.activate("simulator")


def test_values_bound_before_activation_are_reached(tmp_path, monkeypatch):
    """transfer_to_npu is import-order sensitive: `from torch.cuda import is_available` taken
    before the import keeps CUDA semantics. Ours rebinds such names in loaded modules."""
    import ascend_compat

    ascend_compat.deactivate()
    (tmp_path / "acs_user_mod.py").write_text(
        "from torch.cuda import is_available, manual_seed\nfrom torch import randn\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import acs_user_mod

    native = acs_user_mod.is_available
    ascend_compat.activate("simulator")
    try:
        assert acs_user_mod.is_available() is True
        assert acs_user_mod.randn(2, device="cuda").device.type == "npu"
        acs_user_mod.manual_seed(1)
    finally:
        ascend_compat.deactivate()
    assert acs_user_mod.is_available is native
    ascend_compat.activate("simulator")
    sys.modules.pop("acs_user_mod", None)
