"""The generators in tools/ run on small real inputs (wheel zips, yaml, markdown) written here, and
give the same bytes when run twice."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"

yaml = pytest.importorskip("yaml", reason="the generators read YAML with PyYAML (pip install pyyaml)")


def run_tool(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(TOOLS / script), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout


CODEGEN_YAML = """
backend: NPU
cpp_namespace: at_npu::native
supported:
- view
- copy_memory_
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  impl_ns: op_api
- func: relu.default(Tensor self) -> Tensor
  impl_ns: acl_op
- func: _coalesce(Tensor self) -> Tensor
  sparse: op_api
autograd:
- func: _thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx) -> (Tensor, Tensor)
  impl_ns: op_api
custom:
- func: copy_memory_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
- func: npu_foo.bar(Tensor self) -> Tensor
  exposed: true
symint:
- view
"""

FRAMEWORK_YAML = """
backend: NPU
cpp_namespace: at_npu::native
supported:
  - view
  - empty.memory_format
"""

OP_PLUGIN_YAML = """
all_version: [v8.9, v9.0, v9.1]
official:
  - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    acl_op: all_version
  - func: mul.Tensor(Tensor self, Tensor other) -> Tensor
    op_api: [v9.0, newest]
  - func: div.Tensor(Tensor self, Tensor other) -> Tensor
    op_api: [v8.9, v8.9]
  - func: sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    acl_op: v8.9, v9.0
  - func: only_dvm(Tensor self) -> Tensor
    dvm: all_version
  - func: _coalesce(Tensor self) -> Tensor
    sparse: all_version
custom:
  - func: npu_foo.bar(Tensor self) -> Tensor
    op_api: all_version
    exposed: [v9.0, newest]
  - func: npu_old(Tensor self) -> Tensor
    op_api: v8.9
"""


def make_wheel(path: Path, files: dict) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, textwrap.dedent(text))


def test_gen_op_coverage(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    make_wheel(wheels / "torch_npu-9.1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {
        "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml": CODEGEN_YAML,
        "torch_npu/csrc/aten/npu_native_functions.yaml": FRAMEWORK_YAML,
    })
    # an older post release of the same minor must lose to the newer one
    make_wheel(wheels / "torch_npu-9.1.0rc1-cp311-cp311-manylinux_2_28_x86_64.whl", {
        "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml": "supported: [abs]\n",
    })
    op_yaml = tmp_path / "op_plugin_functions.yaml"
    op_yaml.write_text(OP_PLUGIN_YAML)
    fw = tmp_path / "fw.yaml"
    fw.write_text(FRAMEWORK_YAML)
    out = tmp_path / "out.json"
    args = ["--wheel-dir", str(wheels), "--op-plugin", str(op_yaml), "--op-plugin-label", "test op-plugin",
            "--reconstruct", "9.0", str(op_yaml), str(fw), "reconstructed from test yaml", "--output", str(out)]
    log = run_tool("gen_op_coverage.py", *args)
    assert "torch_npu-9.1.0-cp311" in log and "reconstructed 9.0" in log
    first = out.read_bytes()
    data = json.loads(first)
    assert data["_generated_by"] == "tools/gen_op_coverage.py"
    v91 = data["versions"]["9.1"]
    # strings and impl_ns dicts count, sparse-only does not, custom names leave the aten list,
    # ".default" is dropped, autograd-section ops count, framework ops merge in
    assert v91["supported"] == sorted(["view", "add.Tensor", "relu", "_thnn_fused_gru_cell", "empty.memory_format"])
    assert v91["sparse"] == ["_coalesce"]
    assert v91["custom"] == ["copy_memory_", "npu_foo.bar"]
    assert v91["exposed"] == ["npu_foo"]
    v90 = data["versions"]["9.0"]
    # op-plugin version specs: all_version, [v9.0, newest], "v8.9, v9.0"; not [v8.9, v8.9] nor dvm-only
    assert v90["supported"] == sorted(["add.Tensor", "mul.Tensor", "sub.Tensor", "view", "empty.memory_format"])
    assert v90["sparse"] == ["_coalesce"]
    assert v90["custom"] == ["npu_foo.bar"] and v90["exposed"] == ["npu_foo"]
    assert data["_source"]["versions"]["9.0"] == "reconstructed from test yaml"
    # cross-check of the 9.1 wheel against op-plugin's v9.1 view was recorded
    assert data["_crosscheck"]["9.1"]["supported"]["only_in_wheel"] > 0
    run_tool("gen_op_coverage.py", *args)
    assert out.read_bytes() == first, "a second run must give identical output"


def test_gen_op_coverage_no_wheels_is_an_error(tmp_path):
    proc = subprocess.run([sys.executable, str(TOOLS / "gen_op_coverage.py"), "--wheel-dir", str(tmp_path),
                           "--output", str(tmp_path / "o.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and "no torch_npu version found" in proc.stderr
    assert not (tmp_path / "o.json").exists()


NPU_INIT = '''
__all__ = ["is_available", "Stream", "mstx"]
from .utils import *  # noqa
from .mstx import mstx
from .helpers import get_soc_version
default_generators = ()
def is_available():
    return False
'''

NPU_UTILS = '''
__all__ = ["synchronize", "get_cann_version"]
def synchronize(): pass
def get_cann_version(module="CANN"): pass
'''

NPU_MSTX = '''
__all__ = ["mstx"]
class mstx:
    @staticmethod
    def mark(message): pass
    @staticmethod
    def range_start(message): pass
    def _private(self): pass
'''


def test_gen_npu_api(tmp_path):
    wheels = tmp_path / "w"
    d = wheels / "torch_npu-9.1.0"  # an unpacked wheel directory
    for rel, text in {
        "torch_npu/__init__.py": '__all__ = ["erase_stream"]\n',
        "torch_npu/utils/exposed_api.py": 'public_npu_functions = ["npu_foo"]\n',
        "torch_npu/npu/__init__.py": NPU_INIT,
        "torch_npu/npu/utils.py": NPU_UTILS,
        "torch_npu/npu/mstx.py": NPU_MSTX,
        "torch_npu/npu/helpers.py": "def get_soc_version(): pass\n",
        "torch_npu/npu/amp/__init__.py": '__all__ = ["autocast"]\nclass autocast: pass\n',
    }.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    out = tmp_path / "api.json"
    run_tool("gen_npu_api.py", "--wheel-dir", str(wheels), "--output", str(out))
    first = out.read_bytes()
    v = json.loads(first)["versions"]["9.1"]
    assert v["npu_all"] == ["Stream", "is_available", "mstx"]
    npu = set(v["npu"])
    # star import resolved, documented extras kept only when bound, submodules and dotted members
    assert {"utils.synchronize", "get_soc_version", "default_generators", "amp", "amp.autocast",
            "utils.get_cann_version", "mstx.mark", "mstx.range_start"} <= npu
    assert "get_cann_version" in npu  # bound through the star import of .utils
    assert "mstx._private" not in npu and "is_support_inf_nan" not in npu
    assert "synchronize" not in npu  # bound by the star import, but neither in __all__ nor a documented extra
    assert v["torch_npu"] == ["erase_stream", "npu_foo"]
    run_tool("gen_npu_api.py", "--wheel-dir", str(wheels), "--output", str(out))
    assert out.read_bytes() == first


COMPAT_MD = """
# Version Matching

| Component |          Recommended Version          |
|:---------:|:-------------------------------------:|
| TorchNPU  | 9.1.0 (Installation Package Version) |
|  PyTorch  |                9.1.0                 |
|   CANN    |                 10.0.0                 |
|  Python   |   3.10 / 3.11    |

| TorchNPU installation package version | GitCode Branch | PyTorch Version | CANN version |
|:-------------------------------------:|:--------------:|:---------------:|:------------:|
|                9.1.0                 | v9.1.0-1.0.0 |     9.1.0      |  CANN 10.0.0  |
|             9.0.0.post2              | v9.0.0-1.0.0 |     9.0.0      |  CANN 10.0.0  |

<details>
<summary>Click to expand the historical version (including EOL).</summary>

| TorchNPU installation package version |  GitCode Branch   | PyTorch Version |  CANN version  |
|:-------------------------------------:|:-----------------:|:---------------:|:--------------:|
|           9.0.0.rc1 (beta)           |   v9.0.0-0.9.0   |     9.0.0      |   CANN 9.RC1   |

</details>

| PyTorch Version |                        Python version                         |
|:---------------:|:-------------------------------------------------------------:|
| PyTorch 9.1.0  | Python3.10, Python 3.11 |
"""


def test_gen_version_matrix_parses_markdown():
    sys.path.insert(0, str(TOOLS))
    try:
        import gen_version_matrix as g
    finally:
        sys.path.remove(str(TOOLS))
    parsed = g.parse_compatibility(COMPAT_MD)
    rows = {r["torch_npu"]: r for r in parsed["rows"]}
    assert rows["9.1.0"] == {"torch_npu": "9.1.0", "beta": False, "branch": "v9.1.0-1.0.0", "torch": "9.1.0",
                             "cann": "10.0.0", "status": "active"}
    assert rows["9.0.0.rc1"]["beta"] and rows["9.0.0.rc1"]["status"] == "historical"
    assert rows["9.0.0.rc1"]["cann"] == "9.RC1"
    assert parsed["python"] == {"9.1": ["3.10", "3.11"]}
    assert parsed["recommended"]["cann"] == "10.0.0"
    assert g.norm_torch("torch==2.9.0+cpu") == "2.9.0" and g.norm_torch("2.14.0.*") == "2.14.0"
    notes = g.build_notes("we recommend to use gcc 10.2 for ARM and gcc 9.3.1 for X86. If you would like to "
                          "compile with new C++ ABI ... glibc 2.28, gcc 11.2.1\n export _ABI_VERSION=16")
    assert notes == {"gcc_arm": "10.2", "gcc_x86": "9.3.1", "cxx11_abi_glibc": "2.28", "cxx11_abi_gcc": "11.2.1",
                     "fabi_version": 16}


def test_gen_cuda_api_map_doc_parser():
    sys.path.insert(0, str(TOOLS))
    try:
        import gen_cuda_api_map as g
    finally:
        sys.path.remove(str(TOOLS))
    page = textwrap.dedent("""
    ### <code><i>class</i></code> torch.cuda.CUDAGraph

    <div style="margin-left: 2em">

    **NPU 形式名称**：torch.npu.NPUGraph

    | 硬件 | 是否支持 |
    | ---- | :----: |
    | <term>Atlas A2 训练系列产品</term> | ✔ |
    | <term>Ascend 950DT</term> | ✘ |

    **限制与说明**： 当前仅支持推理场景

    > <font size="3">replay()</font>

    **限制与说明**： 方法的说明

    </div>

    ### torch.cuda.memory_usage

    | 硬件 | 是否支持 |
    | ---- | :----: |
    | <term>Atlas A2 训练系列产品</term> | ✘ |
    """)
    parsed = g.parse_doc(page)
    assert parsed["CUDAGraph"] == {"npu_name": "NPUGraph", "restriction_zh": "当前仅支持推理场景",
                                   "support": {"Atlas A2 training": True, "Ascend 950DT": False}}
    assert parsed["memory_usage"]["support"] == {"Atlas A2 training": False}
    assert g.classify("memory_usage", {"memory_usage"}, parsed["memory_usage"])[0] == "unsupported"
    assert g.classify("CUDAGraph", {"NPUGraph"}, parsed["CUDAGraph"])[:2] == ("renamed", "NPUGraph")
    assert g.classify("nccl.all_reduce", set(), None) == ("unsupported", None, g.SUGGESTIONS["nccl"])


def test_gen_npu_op_schemas(tmp_path):
    wheel = tmp_path / "torch_npu-9.1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml", CODEGEN_YAML + textwrap.dedent("""
            custom_autograd:
            - func: npu_bar(Tensor self,
                  int k=1) -> (Tensor, Tensor)
            """))
    out = tmp_path / "schemas.json"
    run_tool("gen_npu_op_schemas.py", str(wheel), "--output", str(out))
    first = out.read_bytes()
    table = json.loads(first)
    assert table["_source"]["wheel"] == wheel.name and table["version"] == "9.1.0"
    assert table["_source"]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    ops = table["ops"]
    assert set(ops) == {"copy_memory_", "npu_foo.bar", "npu_bar"}
    assert ops["npu_foo.bar"] == {"schema": "npu_foo.bar(Tensor self) -> Tensor", "exposed": True,
                                  "autograd": False, "composite": None}
    assert ops["npu_bar"]["autograd"] and ops["npu_bar"]["schema"] == "npu_bar(Tensor self, int k=1) -> (Tensor, Tensor)"
    run_tool("gen_npu_op_schemas.py", str(wheel), "--output", str(out))
    assert out.read_bytes() == first


@pytest.mark.skipif(not os.environ.get("TORCH_NPU_WHEEL"),
                    reason="set TORCH_NPU_WHEEL=<torch_npu-2.14.0-*.whl> to check the committed table regenerates exactly")
def test_committed_npu_op_schemas_regenerate_from_real_wheel(tmp_path):
    out = tmp_path / "npu_op_schemas.json"
    run_tool("gen_npu_op_schemas.py", os.environ["TORCH_NPU_WHEEL"], "--output", str(out))
    committed = REPO / "src" / "ascend_compat" / "data" / "npu_op_schemas.json"
    assert out.read_bytes() == committed.read_bytes()


def test_torch_c_cuda_table_from_stubs(tmp_path):
    """gen_torch_c_cuda.py on a stub laid out like torch's: sections by '# Defined in', CUDA submodule stubs."""
    stub = tmp_path / "torch" / "_C"
    stub.mkdir(parents=True)
    (tmp_path / "torch" / "version.py").write_text("__version__ = '9.9.0+cpu'\n")
    (stub / "__init__.pyi").write_text(textwrap.dedent("""\
        # Defined in torch/csrc/jit/python/init.cpp
        def _jit_set_nvfuser_enabled(enable: bool) -> bool: ...
        def _jit_set_profiling_executor(flag: bool) -> bool: ...
        def _set_cudnn_allow_tf32(arg: bool) -> None: ...
        # Defined in torch/csrc/cuda/Module.cpp
        def _cuda_getDeviceCount() -> int: ...
        class _CudaDeviceProperties: ...
        # Defined in torch/csrc/Module.cpp
        def _set_onednn_allow_tf32(arg: bool) -> None: ...
        """))
    (stub / "_nvtx.pyi").write_text("def rangePushA(message: str) -> int: ...\n")
    out = tmp_path / "t.json"
    run_tool("gen_torch_c_cuda.py", "--torch-dir", str(tmp_path / "torch"), "--out", str(out))
    table = json.loads(out.read_text())
    assert table["_generated_by"] == "tools/gen_torch_c_cuda.py" and "torch 9.9.0" in table["_source"]
    assert table["cuda_build"] == ["_CudaDeviceProperties", "_cuda_getDeviceCount", "_nvtx", "_nvtx.rangePushA"]
    assert table["gpu_switches"] == ["_jit_set_nvfuser_enabled", "_set_cudnn_allow_tf32"]
    assert run_tool("gen_torch_c_cuda.py", "--torch-dir", str(tmp_path / "torch"), "--out", str(out), "--check")


def test_torch_c_cuda_table_is_up_to_date_with_the_installed_torch():
    import torch

    from ascend_compat import data

    made_from = data.load_table("torch_c_cuda.json")["_source"].split()[1]
    if torch.__version__.split("+")[0] != made_from or torch.version.cuda:
        pytest.skip(f"the table was made from torch {made_from}'s CPU build")
    run_tool("gen_torch_c_cuda.py", "--check")
