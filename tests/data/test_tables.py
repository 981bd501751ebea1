"""Every packaged table's header, and the torch_npu.npu API, torch.cuda mapping and version loaders."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from ascend_compat import data

TABLES = sorted(p.name for p in resources.files("ascend_compat.data").iterdir() if p.name.endswith(".json"))


def test_tables_present():
    assert {"npu_native_ops.json", "npu_api.json", "cuda_api_map.json", "version_matrix.json"} <= set(TABLES)


@pytest.mark.parametrize("name", TABLES)
def test_every_table_names_source_and_generator(name):
    table = json.loads(resources.files("ascend_compat.data").joinpath(name).read_text(encoding="utf-8"))
    assert table.get("_source"), name
    gen = table.get("_generated_by", "")
    assert gen.startswith("tools/gen_") and gen.endswith(".py"), gen
    # the generator is in the repo (tests run from a checkout)
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    assert (repo / gen).is_file(), gen


def test_load_table_missing_is_clear():
    with pytest.raises(data.DataError, match="missing.*tools/"):
        data.load_table("no_such_table.json")


# ---------------------------------------------------------------- torch_npu.npu API

def test_npu_api_2_14():
    api = data.npu_api("2.14.0")
    # __all__ (144 names in 2.14.0) plus documented extras and submodule members
    assert {"is_available", "device_count", "set_device", "Stream", "Event", "NPUGraph", "mstx",
            "MemPool", "npurt", "get_device_properties"} <= api
    assert {"get_soc_version", "sdp_kernel", "enable_flash_sdp", "default_generators"} <= api
    # these live only in torch.npu.utils (torch_npu/npu/__init__.py does not import them)
    assert {"utils.is_support_inf_nan", "utils.npu_check_overflow", "utils.get_cann_version"} <= api
    assert not ({"is_support_inf_nan", "npu_check_overflow", "get_cann_version"} & api)
    assert {"amp", "random", "memory", "graphs", "streams", "utils"} <= api
    assert {"amp.autocast", "amp.GradScaler", "utils.get_cann_version", "mstx.range_start"} <= api
    # CUDA-only names are not there
    assert not ({"CUDAGraph", "nvtx", "is_tf32_supported", "jiterator"} & api)
    # MemPoolContext was removed after 2.5.1; npurt/ExternalStream were added
    assert "MemPoolContext" in data.npu_api("2.5.1") and "MemPoolContext" not in api
    assert "npurt" not in data.npu_api("2.5.1")


def test_npu_api_versions_and_resolution():
    versions = data.npu_api_versions()
    assert versions[0] == "2.1" and versions[-1] == "2.14"
    assert "2.2" not in versions  # no 2.2 wheel was ever on PyPI
    assert data.npu_api("2.2.0") == data.npu_api("2.1")  # nearest older version
    with pytest.raises(ValueError, match="older"):
        data.npu_api("2.0.1")


def test_custom_api():
    api = data.custom_api("2.14")
    assert {"npu_fusion_attention", "npu_rms_norm", "npu_rotary_mul", "erase_stream", "matmul_checksum"} <= api
    # every exposed op is a real custom op of that version
    ops = data.custom_ops("2.14")
    assert {n for n in api if n.startswith("npu_")} <= ops


# ---------------------------------------------------------------- torch.cuda map

def test_cuda_api_map_shape():
    m = data.cuda_api_map()
    assert len(m) > 200
    for name, entry in m.items():
        assert entry["status"] in {"mapped", "renamed", "unsupported"}, name
        if entry["status"] == "unsupported":
            assert entry["npu_name"] is None and entry["note"], name
        else:
            assert entry["npu_name"], name
            # every target really exists in torch.npu of that version
            assert entry["npu_name"] in data.npu_api(), name


@pytest.mark.parametrize("cuda, status, npu", [
    ("is_available", "mapped", "is_available"),
    ("current_device", "mapped", "current_device"),
    ("amp.autocast", "mapped", "amp.autocast"),
    ("CUDAGraph", "renamed", "NPUGraph"),
    ("CUDAPluggableAllocator", "renamed", "NPUPluggableAllocator"),
    ("cudart", "renamed", "npurt"),
    ("nvtx.range_push", "renamed", "mstx.range_push"),
    ("memory.mem_get_info", "mapped", "mem_get_info"),
    ("is_tf32_supported", "unsupported", None),
    ("jiterator._create_jit_fn", "unsupported", None),
    ("nccl.all_reduce", "unsupported", None),
    ("memory_usage", "unsupported", None),  # exists nowhere; docs mark it unsupported everywhere
])
def test_cuda_api_map_facts(cuda, status, npu):
    entry = data.cuda_api_map("2.14")[cuda]
    assert (entry["status"], entry["npu_name"]) == (status, npu)


def test_cuda_api_map_is_versioned():
    # torch_npu 2.1's mstx has no range_push; cudart's npurt appeared later
    assert data.cuda_api_map("2.1")["nvtx.range_push"]["status"] == "unsupported"
    assert data.cuda_api_map("2.5")["cudart"]["status"] == "unsupported"
    assert data.cuda_api_map("2.14")["cudart"]["status"] == "renamed"


def test_cuda_api_map_suggestions_and_docs():
    m = data.cuda_api_map("2.14")
    assert "hf32" in m["is_tf32_supported"]["note"].lower()
    assert "hccl" in m["nccl"]["note"]
    props = m["get_device_properties"]
    assert props["doc_note_zh"] and props["support"]["Atlas A2 training"] is True
    assert props["doc"].endswith("pytorch_2-13-0/torch-cuda.md")
    assert "doc" not in data.cuda_api_map("2.5")["get_device_properties"]  # no docs page before 2.7
    # results are copies
    m["is_available"]["status"] = "x"
    assert data.cuda_api_map("2.14")["is_available"]["status"] == "mapped"


# ---------------------------------------------------------------- version matrix

def test_version_matrix_rows():
    rows = data.version_matrix()
    by = {r["torch_npu"]: r for r in rows}
    assert by["2.5.1.post1"]["torch"] == "2.5.1" and by["2.5.1.post1"]["cann"] == "8.2.RC1"
    assert by["2.5.1.post1"]["branch"] == "v2.5.1-7.1.0" and by["2.5.1.post1"]["status"] == "active"
    assert by["2.12.0"]["cann"] == "9.1.0"
    assert by["2.2.0.post2"]["status"] == "historical"
    assert by["1.11.0.post14"]["status"] == "historical"
    # newer than Ascend's matrix: known from PyPI metadata only
    assert by["2.14.0"]["status"] == "pypi-only" and by["2.14.0"]["torch"] == "2.14.0" and by["2.14.0"]["cann"] is None
    versions = [r["torch_npu"] for r in rows]
    assert len(versions) == len(set((r["torch_npu"], r["cann"]) for r in rows))
    for r in rows:
        assert r["source"]


@pytest.mark.parametrize("torch_version, expect", [
    ("2.5.1", "2.5.1.post1"), ("2.5.1+cpu", "2.5.1.post1"), ("2.9.0", "2.9.0.post6"), ("2.1.0", "2.1.0.post17"),
    ("2.14.0", "2.14.0"), ("2.14", "2.14.0"), ("2.9.1", "2.9.1"),
])
def test_recommended(torch_version, expect):
    assert data.recommended(torch_version)["torch_npu"] == expect


def test_recommended_none_and_errors():
    assert data.recommended("2.14.1") is None  # torch_npu 2.14.0 pins torch==2.14.0.*
    assert data.recommended("2.0.5") is None
    with pytest.raises(ValueError):
        data.recommended("latest")


def test_python_support():
    assert data.python_support("2.5.1") == ("3.9", "3.10", "3.11")
    assert data.python_support("2.13.0+cpu") == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert data.python_support("2.2.0") == ("3.8", "3.9", "3.10")
    assert data.python_support("2.14.1") is not None  # from the torch 2.14 wheel's classifiers
    assert data.python_support("9.9") is None


def test_recommended_combination():
    rec = data.recommended_combination()
    assert rec["torch_npu"] == rec["torch"] == "2.12.0" and rec["cann"] == "9.1.0"


def test_npu_op_schemas_2_14():
    ops = data.npu_op_schemas()
    assert len({k.split(".")[0] for k in ops}) == 398 and len(ops) == 419
    assert ops["npu_format_cast.Tensor"]["exposed"]
    assert ops["npu_rms_norm"]["schema"] == "npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)"
    assert {k.split(".")[0] for k in ops} <= data.custom_ops("2.14")
