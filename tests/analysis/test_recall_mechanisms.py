"""check's general detection mechanisms for constructs seen missed on unseen code (one case each)."""
from __future__ import annotations

import textwrap

from ascend_compat.analysis.difficulty import rate_findings
from ascend_compat.analysis.scan import scan_file


def _scan(tmp_path, src: str, name: str = "x.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(src))
    return scan_file(str(p), "cpp" if name.endswith(".cpp") else "python").findings


def _lines(findings, rule=None):
    return {f.line for f in findings if rule is None or f.rule == rule}


def test_library_use_sites_through_aliases(tmp_path):
    fs = _scan(tmp_path, """\
        from apex import amp
        from apex.parallel import DistributedDataParallel as DDP, convert_syncbn_model
        import apex.parallel as P
        model, opt = amp.initialize(model, opt)
        with amp.scale_loss(loss, opt) as s:
            pass
        model = convert_syncbn_model(model)
        model = DDP(model)
        model = P.convert_syncbn_model(model)
        """)
    assert _lines(fs, "cuda-library") == {1, 2, 3, 4, 5, 7, 8, 9}


def test_use_sites_of_a_plain_import_are_not_skipped_by_the_prefilter(tmp_path):
    fs = _scan(tmp_path, "import pynvml\n" + "x = 1\n" * 250 + "def f():\n    pynvml.nvmlInit()\n")
    assert 253 in _lines(fs, "cuda-library")


def test_import_lines_of_cuda_modules(tmp_path):
    fs = _scan(tmp_path, """\
        import torch.backends.cudnn as cudnn
        from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME
        from torch.cuda import _lazy_call, device
        from torch.utils.cpp_extension import BuildExtension
        import torch.nn as nn
        """)
    assert _lines(fs) == {1, 2, 3}


def test_build_script_constructs(tmp_path):
    fs = _scan(tmp_path, """\
        import glob
        sources = glob.glob("csrc/*.cu") + ["a.cpp"]
        args = {}
        args["nvcc"] = ["-O3"]
        name = "kernel.cuh"
        not_a_path = "see kernel.cu for details"
        """)
    assert _lines(fs, "cuda-source") == {2, 5}
    assert _lines(fs, "cuda-extension") == {4}


def test_a_statement_whose_only_trigger_is_nvcc_is_analysed(tmp_path):
    fs = _scan(tmp_path, "flags = {}\n" + "x = 1\n" * 250 + "flags['nvcc'] = []\n")
    assert 252 in _lines(fs, "cuda-extension")


def test_private_bindings_profiler_and_inductor_knobs(tmp_path):
    fs = _scan(tmp_path, """\
        import torch
        import torch._inductor.config as ic
        from torch.profiler import ProfilerActivity
        n = torch._C._cuda_getDeviceCount()
        acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        ic.triton.cudagraph_trees = False
        torch.cuda.cudart().cudaProfilerStart()
        """)
    by_line = {f.line: f for f in fs}
    assert by_line[4].handling == "manual"
    assert by_line[5].handling == "partial"
    assert by_line[6].rule == "compile-cuda-graphs"
    assert by_line[7].handling == "partial"


def test_guarded_optional_import_is_not_a_blocker(tmp_path):
    guarded = _scan(tmp_path, """\
        try:
            import pynvml
        except ImportError:
            pynvml = None
        """)
    assert [f.handling for f in guarded] == ["partial"]
    assert rate_findings(guarded).level == "moderate"
    plain = _scan(tmp_path, "import pynvml\n", "y.py")
    assert [f.handling for f in plain] == ["manual"]
    assert rate_findings(plain).level == "hard"


def test_cpp_device_reference_is_a_local_edit(tmp_path):
    fs = _scan(tmp_path, "#include <torch/torch.h>\n" + "auto t = x.to(torch::kCUDA);\n" * 5, "demo.cpp")
    assert {f.rule for f in fs} == {"device-string"}
    assert rate_findings(fs).level == "moderate"
    kernel = _scan(tmp_path, "#include <cuda_runtime.h>\n", "k.cpp")
    assert rate_findings(kernel).level == "hard"


def test_intra_file_data_flow_for_backend_device_and_dtype(tmp_path):
    fs = _scan(tmp_path, textwrap.dedent("""\
        import argparse
        import numpy as np
        import torch
        import torch.distributed as dist
        p = argparse.ArgumentParser()
        p.add_argument("--dist-backend", default="nccl", type=str)
        p.add_argument("--gpu", default=None, type=int)
        args = p.parse_args()
        dist.init_process_group(backend=args.dist_backend)
        model = torch.nn.Linear(2, 2)
        model.to(args.gpu)
        arr = np.zeros((3, 3))
        ok = np.zeros((3, 3), dtype=np.float32)
        t = torch.from_numpy(arr)
        u = torch.from_numpy(ok)
        """) + "x = 1\n" * 250)
    assert _lines(fs, "nccl-backend") == {6}
    assert _lines(fs, "int-device") == {11}
    assert _lines(fs, "float64") == {14}


def test_library_names_bound_by_a_star_import(tmp_path):
    body = "x = 1\n" * 250  # long enough for the statement-level prefilter to apply
    fs = _scan(tmp_path, "from apex.fp16_utils import *\n" + body + textwrap.dedent("""\
        def step(loss):
            return to_python_float(loss) + len([loss])
        def helper(x):
            return x
        y = helper(1)
        """))
    hits = [f for f in fs if f.rule == "cuda-library"]
    assert {f.line for f in hits} == {1, 253}
    assert "apex.fp16_utils.to_python_float" in hits[1].message
    # a second star import: the name may come from it, so it is not attributed to the library
    fs = _scan(tmp_path, "from apex.fp16_utils import *\nfrom mymod import *\ny = to_python_float(1)\n")
    assert _lines(fs, "cuda-library") == {1}


def test_cuda_sources_joining_a_build(tmp_path):
    head = textwrap.dedent("""\
        import glob
        sources = glob.glob("csrc/*.cpp")
        gpu_srcs = glob.glob(os.path.join("csrc", "*.cu"))
        """)
    tail = "sources += gpu_srcs\nother = sources + []\nall_srcs = cpp + gpu_srcs\n"
    fs = _scan(tmp_path, head + "x = 1\n" * 250 + tail, name="setup.py")
    assert _lines(fs, "cuda-source") == {3, 254, 256}


def test_extension_load_of_a_variable_holding_cuda_sources(tmp_path):
    fs = _scan(tmp_path, """\
        import os
        from torch.utils.cpp_extension import load
        sources = ["funcs.cpp", "mx.cu"]
        sources = [os.path.join("cpp", x) for x in sources]
        funcs = load(name="ext", sources=sources)
        cpu_only = load(name="cpu", sources=["a.cpp"])
        """)
    assert _lines(fs, "cuda-extension") == {5}


def test_a_name_an_except_handler_rebinds_stays_bound_to_its_cuda_import(tmp_path):
    src = """\
        try:
            import xformers.ops as xops
        except ImportError:
            {xops}
        try:
            from apex import amp
        except ImportError:
            {amp}
        try:
            import pynvml
        except ImportError:
            {nvml}
        def attention(q, k, v):
            if xops is not None:
                return xops.memory_efficient_attention(q, k, v)
        def step(loss, opt):
            with amp.scale_loss(loss, opt) as scaled:
                scaled.backward()
        def probe():
            if pynvml is not None:
                pynvml.nvmlInit()
        """
    rebound = _scan(tmp_path, src.format(xops="xops = None", amp="amp = None", nvml="pynvml = None"))
    passed = _scan(tmp_path, src.format(xops="pass", amp="pass", nvml="pass"), "y.py")
    assert _lines(rebound, "cuda-library") == _lines(passed, "cuda-library") == {2, 6, 10, 15, 17, 21}
    # the optional pynvml is used only where it imported: partial, and the file is not blocked by it
    nvml = [f for f in rebound if f.line == 21]
    assert nvml[0].handling == "partial"
    assert rate_findings(rebound).level == "moderate"


def test_a_name_an_else_branch_rebinds_stays_bound(tmp_path):
    fs = _scan(tmp_path, """\
        import os
        if os.environ.get("USE_TC"):
            import torch.cuda as tc
        else:
            tc = None
        def sync():
            tc.synchronize()
        """)
    assert 7 in _lines(fs, "torch-cuda-api")


def test_every_name_of_a_multi_line_import_at_its_own_line(tmp_path):
    fs = _scan(tmp_path, """\
        from torch.utils.cpp_extension import (
            BuildExtension,
            CUDAExtension,
            CUDA_HOME,
        )
        """)
    assert _lines(fs, "cuda-extension") == {3, 4}


def test_nvcc_options_architectures_and_the_nvcc_program(tmp_path):
    fs = _scan(tmp_path, """\
        import os, subprocess
        def cc_flags(major):
            flags = ["-O3", "-std=c++17"]
            flags += ["-gencode", "arch=compute_80,code=sm_80"]
            flags.append(f"arch=compute_{major}0,code=sm_{major}0")
            flags += ["-U__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr", "-maxrregcount=64"]
            return flags
        nvcc = os.path.join(os.environ.get("TOOLKIT", "/opt"), "bin/nvcc")
        os.system("nvcc --version")
        msg = "compile with -O3 and -Wall"
        """)
    assert _lines(fs, "cuda-extension") == {4, 5, 6, 8, 9}


def test_a_build_call_is_one_finding_and_any_call_passing_nvcc_flags_is_one(tmp_path):
    fs = _scan(tmp_path, """\
        from torch.utils.cpp_extension import load
        from .ops import get_plugin
        ext = load(name="k", sources=[f for f in SRCS],
                   extra_cuda_cflags=["--use_fast_math", "-lineinfo"])
        plugin = get_plugin("bias_act", sources=SRCS,
                            extra_cuda_cflags=["--use_fast_math"])
        """)
    assert _lines(fs, "cuda-extension") == {3, 5}


def test_toolkit_version_and_capability_gates_follow_the_value(tmp_path):
    fs = _scan(tmp_path, """\
        import subprocess
        import torch
        from packaging.version import Version
        def bare_metal_version(home):
            raw = subprocess.check_output([home + "/bin/nvcc", "-V"], universal_newlines=True)
            out = raw.split()
            return Version(out[out.index("release") + 1].split(",")[0])
        _, ver = None, bare_metal_version("/usr/local")
        if ver >= Version("11.8"):
            pass
        major, minor = torch.cuda.get_device_capability()
        use_flash = major >= 8
        if torch.version.cuda is None:
            pass
        count = 3
        if count >= 2:
            pass
        """)
    assert _lines(fs, "cuda-version-gate") == {9, 13}
    assert _lines(fs, "device-capability") == {11, 12}


def test_device_mesh_type_and_members_of_recorded_names(tmp_path):
    fs = _scan(tmp_path, """\
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed import ProcessGroupNCCL
        mesh = init_device_mesh("cuda", (2, 4))
        opts = ProcessGroupNCCL.Options()
        """)
    assert _lines(fs, "device-string") == {3}
    assert 4 in _lines(fs, "nccl-backend")


def test_triton_runtime_api_and_launches_outside_the_kernel_body(tmp_path):
    fs = _scan(tmp_path, """\
        import torch
        import triton
        import triton.language as tl
        from triton.runtime import driver

        @triton.jit
        def _add(x_ptr, n, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

        def add(x):
            grid = (triton.cdiv(x.numel(), 1024),)
            _add[grid](x, x.numel(), BLOCK=1024)
            return x

        def sm_count():
            return driver.active.utils.get_device_properties(0)["multiprocessor_count"]

        table = {}
        table["k"][0](1)
        """)
    assert _lines(fs, "triton-kernel") == {6, 13, 14, 18}
    assert not _lines(fs) & set(range(8, 11))  # the kernel body is the kernel, reported at its decorator


def test_nvidia_tools_in_command_lines_not_in_messages(tmp_path):
    fs = _scan(tmp_path, """\
        import logging, os, shutil, subprocess
        def mps_running():
            return subprocess.run("ps -ef | grep '[n]vidia-cuda-mps-control'", shell=True).returncode == 0
        def stop_mps():
            subprocess.run("echo quit | nvidia-cuda-mps-control", shell=True)
        def query(i):
            if not shutil.which("nvidia-smi"):
                logging.warning("nvidia-smi not found in PATH.")
            cmd = ["nvidia-smi", "-i", str(i), "--query-gpu=compute_mode"]
            return subprocess.run(cmd)
        os.environ["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = "50"
        """)
    assert _lines(fs, "nvidia-smi") == {3, 5, 7, 9}
    assert _lines(fs, "cuda-env-other") == {11}


def test_private_torch_c_names_from_torchs_stubs(tmp_path):
    fs = _scan(tmp_path, """\
        import torch
        torch._C._jit_set_nvfuser_enabled(True)
        torch._C._jit_override_can_fuse_on_gpu(False)
        if hasattr(torch._C, "_jit_set_nvfuser_enabled"):
            pass
        n = torch._C._cuda_getDeviceCount()
        torch._C._set_cudnn_allow_tf32(True)
        torch._C._jit_set_profiling_executor(False)
        """)
    by_line = {f.line: f for f in fs}
    assert set(by_line) == {2, 3, 4, 6, 7}
    assert [by_line[i].handling for i in (2, 3, 4, 6, 7)] == ["partial", "partial", "partial", "manual", "partial"]



def test_library_calls_that_switch_on_a_cuda_only_back_end(tmp_path):
    fs = _scan(tmp_path, """\
        from diffusers import StableDiffusionPipeline
        from transformers import AutoModelForCausalLM
        pipe = StableDiffusionPipeline.from_pretrained("x")
        pipe.unet.enable_xformers_memory_efficient_attention()
        pipe.vae.set_use_memory_efficient_attention_xformers(False)
        pipe.vae.set_use_memory_efficient_attention_xformers(True)
        lm = AutoModelForCausalLM.from_pretrained("y", attn_implementation="flash_attention_2")
        lm3 = AutoModelForCausalLM.from_pretrained("y", attn_implementation="flash_attention_3")
        ok = AutoModelForCausalLM.from_pretrained("y", attn_implementation="sdpa")
        """)
    by_line = {f.line: f for f in fs}
    assert set(by_line) == {4, 6, 7, 8}
    assert by_line[4].handling == "partial" and "enable_npu_flash_attention" in by_line[4].suggestion
    assert by_line[8].handling == "manual"


def test_a_part_of_a_library_its_drop_in_lacks_is_manual(tmp_path):
    fs = _scan(tmp_path, """\
        from apex import amp
        from apex.contrib.optimizers import FusedLamb
        from flash_attn.bert_padding import pad_input
        from flash_attn.utils.distributed import all_gather
        opt = FusedLamb(params)
        x = all_gather(pad_input(y, i, b, s), group)
        """)
    by_line = {}
    for f in fs:
        by_line.setdefault(f.line, []).append(f.handling)
    assert by_line[1] == ["partial"] and by_line[3] == ["partial"]
    assert by_line[2] == ["manual"] and by_line[4] == ["manual"] and by_line[5] == ["manual"]
    assert sorted(by_line[6]) == ["manual", "partial"]
    rating = rate_findings(fs)
    assert rating.level == "hard" and any("apex.contrib.optimizers" in r for r in rating.reasons)
    guarded = _scan(tmp_path, """\
        try:
            from apex.multi_tensor_apply import multi_tensor_applier
        except ImportError:
            multi_tensor_applier = None
        """, "g.py")
    assert [f.handling for f in guarded] == ["partial"]


def test_device_generic_libraries_are_no_cuda_use(tmp_path):
    fs = _scan(tmp_path, """\
        import deepspeed
        from deepspeed.accelerator import get_accelerator
        from deepspeed.ops.adam import FusedAdam
        engine, opt, _, _ = deepspeed.initialize(model=model, config=cfg)
        x = x.to(get_accelerator().device_name())
        get_accelerator().synchronize()
        """)
    assert _lines(fs) == {3}
    assert rate_findings([]).level == "none"


def test_a_module_imported_by_name_and_bound_through_global(tmp_path):
    fs = _scan(tmp_path, """\
        import importlib
        def get_class():
            global fused_adam_cuda
            fused_adam_cuda = importlib.import_module("fused_adam_cuda")
        class Opt:
            def step(self, p):
                fused_adam_cuda.adam(p)
        tools = importlib.import_module("os.path")
        """)
    assert _lines(fs, "cuda-library") == {4, 7}


def test_a_method_call_is_reported_at_the_method_name(tmp_path):
    fs = _scan(tmp_path, """\
        ids = torch.tensor(
            [1, 2, 3], dtype=torch.int32, device="cpu", pin_memory=True
        ).cuda(non_blocking=True)
        """)
    assert _lines(fs, "cuda-method") == {3}


def test_cuda_code_kept_in_a_string(tmp_path):
    fs = _scan(tmp_path, '''\
        HEAD = """
        #include "conv_cuda.cuh"
        std::vector<at::Tensor> forward(at::Tensor x);
        """
        BLOCK = """
            kernel<{k}, scalar_t><<<blocks, {b}, 0, stream>>>(x.data<scalar_t>());
        """
        DOC = """Run the kernel on the device: see the CUDA guide."""
        def gen():
            with open("conv_cuda_forward.cu", "w") as out:
                out.write(HEAD + BLOCK)
        ''')
    assert _lines(fs, "cuda-source") == {1, 5, 10}


def test_an_environment_variable_name_held_by_a_variable(tmp_path):
    fs = _scan(tmp_path, """\
        import os
        def enable(allow_timeout):
            if allow_timeout:
                key, value = "NCCL_ASYNC_ERROR_HANDLING", "1"
                os.environ[key] = value
            name = "CUDA_VISIBLE_DEVICES"
            print(os.getenv(name))
            label = "MY_SETTING"
            os.environ[label] = "x"
        """)
    assert _lines(fs) == {4, 6}


def test_a_librarys_own_package_importing_itself_is_no_library_use(tmp_path):
    """Inside bitsandbytes' repository its modules import each other: that is the project's own code (its CUDA
    code is found in those files); a script outside the package (a benchmark) uses the library like any user."""
    pkg = tmp_path / "bitsandbytes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from bitsandbytes import functional\n")
    (pkg / "diagnostics.py").write_text("from bitsandbytes.cextension import HIP_ENVIRONMENT\nprint(HIP_ENVIRONMENT)\n")
    bench = tmp_path / "benchmarking"
    bench.mkdir()
    (bench / "bench.py").write_text("import bitsandbytes as bnb\nopt = bnb.optim.PagedAdamW(params)\n")
    inside = scan_file(str(pkg / "diagnostics.py")).findings + scan_file(str(pkg / "__init__.py")).findings
    assert not [f for f in inside if f.rule == "cuda-library"]
    assert _lines(scan_file(str(bench / "bench.py")).findings, "cuda-library") == {1, 2}


def test_each_name_of_a_multi_line_library_import_at_its_own_line(tmp_path):
    fs = _scan(tmp_path, """\
        try:
            from pynvml import (
                NVMLError,
                nvmlInit,
            )
        except ImportError:
            nvmlInit = None
        from flash_attn.ops.triton.cross_entropy import (
            cross_entropy_loss as ce,
        )
        """)
    assert _lines(fs, "cuda-library") == {2, 3, 4, 8, 9}
    by_line = {f.line: f for f in fs}
    assert by_line[3].handling == by_line[2].handling == "partial"  # guarded: optional, as the import
    assert by_line[9].handling == by_line[8].handling == "manual"  # a part the drop-in lacks


def test_backend_names_in_any_case_nvcc_macros_and_nvcc_variables(tmp_path):
    fs = _scan(tmp_path, """\
        import os
        import torch.distributed as dist
        dist.init_process_group(backend="NCCL" if gpu else "GLOO")
        args = {"nvcc": ["-O3", "-DCUDA_HAS_FP16=1", "-D__CUDA_NO_HALF_OPERATORS__"], "cxx": ["-DWITH_X=1"]}
        extra = os.getenv("NVCC_FLAGS", "")
        other = os.getenv("CC_FLAGS", "")
        """)
    assert _lines(fs, "nccl-backend") == {3}
    assert _lines(fs, "cuda-extension") == {4}
    assert _lines(fs, "cuda-env-other") == {5}
    cols = {f.col for f in fs if f.line == 4 and f.rule == "cuda-extension"}
    line4 = 'args = {"nvcc": ["-O3", "-DCUDA_HAS_FP16=1", "-D__CUDA_NO_HALF_OPERATORS__"], "cxx": ["-DWITH_X=1"]}'
    assert {line4.index('"-DCUDA_HAS') + 1, line4.index('"-D__CUDA') + 1} <= cols  # the two CUDA header macros
    assert line4.index('"-O3') + 1 not in cols and line4.index('"-DWITH') + 1 not in cols


def test_file_names_of_nvidia_libraries_loaded_or_searched(tmp_path):
    fs = _scan(tmp_path, """\
        import ctypes, glob
        handle = ctypes.CDLL("libcudart.so")
        PATTERNS = ("cudart64*.dll", "libcudart*.so*", "libamdhip64.so*")
        found = glob.glob("/usr/local/cuda/lib64/libcublasLt.so.12")
        print("could not load libcudart.so")
        ok = "cuda_helpers.py"

        def set_device(dev):
            result = handle.cudaSetDevice(ctypes.c_int(dev))
            other = ctypes.CDLL("libm.so.6")
            return other.cos(dev)
        """)
    assert _lines(fs, "cuda-library") == {2, 3, 4, 9}
    handling = {f.line: {g.handling for g in fs if g.line == f.line} for f in fs}
    assert handling[2] == handling[9] == {"manual"}  # loaded, and called into through the handle
    assert handling[3] == handling[4] == {"partial"}  # searched for: not found on Ascend, the other branch runs
    assert len([f for f in fs if f.line == 3]) == 2


def test_cuda_only_environment_variable_families(tmp_path):
    fs = _scan(tmp_path, """\
        import os
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        force = os.getenv("FORCE_CUDA", "0") == "1"
        lazy = os.environ.get("CUDA_MODULE_LOADING")
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        os.environ["CUDNN_LOGINFO_DBG"] = "1"
        os.environ["MY_SETTING"] = "1"
        fraction = float(os.getenv("CUDA_MEMORY_FRACTION", "1.0"))  # the application's own variable
        """)
    assert _lines(fs, "cuda-env-other") == {2, 3, 4, 5, 6}
    assert all(f.handling == "partial" for f in fs if f.rule == "cuda-env-other")


def test_nvcc_device_code_options(tmp_path):
    fs = _scan(tmp_path, """\
        def flags(build_type):
            if build_type == "debug":
                return ["--device-debug"]
            return ["--device-c", "-dlto", "--debug", "-O3"]
        """)
    assert _lines(fs, "cuda-extension") == {3, 4}


def test_nvcc_run_through_a_name_and_the_gates_on_its_version(tmp_path):
    fs = _scan(tmp_path, """\
        import subprocess

        def toolkit_version(home):
            compiler = "nvcc" if home is None else home + "/bin/nvcc"
            out = subprocess.check_output([compiler, "-V"], universal_newlines=True).split()
            return int(out[out.index("release") + 1].split(".")[0])

        def build(home):
            version = toolkit_version(home)
            if version >= 12:
                return ["-O3"]
            tool = "hipcc"
            subprocess.check_output([tool, "--version"])
            return []
        """)
    assert 5 in _lines(fs, "cuda-extension") and 13 not in _lines(fs)
    assert _lines(fs, "cuda-version-gate") == {10}


def test_presence_tests_and_parsing_of_a_toolkit_version_are_not_gates(tmp_path):
    fs = _scan(tmp_path, """\
        import torch

        def version_tuple():
            if torch.version.cuda:
                parts = torch.version.cuda.split(".")
                if len(parts) >= 2:
                    return tuple(map(int, parts[:2]))
            return None

        def specs():
            v = version_tuple()
            if v is None:
                return None
            if v >= (12, 1):
                return "new"
            return "old"
        """)
    assert _lines(fs, "cuda-version-gate") == {4, 5, 14}


def test_cuda_paths_whose_failure_is_caught_with_a_fallback_are_optional(tmp_path):
    src = """\
        import triton, torch

        @triton.jit
        def _kernel(x):
            pass

        def fast_cuda(x):
            _kernel[(1,)](x)
            return x

        def middle_cuda(x):
            return fast_cuda(x)

        def run(x):
            try:
                return middle_cuda(x)
            except RuntimeError:
                return x

        def direct(x):
            try:
                _kernel[(1,)](x)
            except (ValueError, RuntimeError):
                pass

        def always_cuda(x):
            _kernel[(2,)](x)

        always_cuda(0)

        def strict_cuda(x):
            _kernel[(3,)](x)

        try:
            strict_cuda(0)
        except RuntimeError:
            print("failed")
            raise

        def helper(x):
            _kernel[(4,)](x)

        try:
            helper(torch.cuda.current_device())
        except RuntimeError:
            pass

        def elsewhere():
            return helper(1)  # no trigger word on this line: the function is not known to be optional
        """
    fs = _scan(tmp_path, src)
    handling = {f.line: f.handling for f in fs if f.rule == "triton-kernel"}
    assert handling[8] == "partial"  # fast_cuda() <- middle_cuda() <- run()'s try/except RuntimeError
    assert handling[22] == "partial"  # caught where it runs
    assert handling[27] == "manual"  # always_cuda() is called unguarded
    assert handling[32] == "manual"  # the handler raises again: no fallback
    assert handling[41] == "manual"  # called where the analysis did not look
    assert handling[3] == "manual"  # the kernel itself
    assert rate_findings(fs).level == "hard"
    fs = _scan(tmp_path, src.replace("return helper(1)", "return 1"), "z.py")
    assert {f.line: f.handling for f in fs if f.rule == "triton-kernel"}[41] == "partial"
    fs = _scan(tmp_path, """\
        def load():
            import triton
            return triton

        try:
            fa = load()
        except RuntimeError:  # does not catch the ImportError of the import
            fa = None
        """, "y.py")
    assert [f.handling for f in fs if f.line == 2] == ["manual"]


def test_a_toolkit_version_handed_to_a_parameter_is_gated_inside_the_function(tmp_path):
    fs = _scan(tmp_path, """\
        import torch

        def flags(version, debug=False):
            if version >= 1201:
                return ["-O3"]
            if debug > 0:
                return ["-g"]
            return []

        def other(version):
            return version < 3

        cuda = int(torch.version.cuda.replace(".", ""))
        args = flags(cuda, debug=True)
        ok = other(2)
        """)
    assert _lines(fs, "cuda-version-gate") == {4, 13}


def test_optional_paths_are_not_matched_across_notebook_cells(tmp_path):
    import json

    cells = ["def helper_cuda(x):\n    y = 1\n    z = 2\n    return x\n"
             "try:\n    helper_cuda(torch.cuda.current_device())\nexcept RuntimeError:\n    pass\n",
             "import triton\n@triton.jit\ndef k(x):\n    pass\n"]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "n.ipynb"
    p.write_text(json.dumps(nb))
    fs = scan_file(str(p), "notebook").findings
    kernel = [f for f in fs if f.rule == "triton-kernel" and f.cell == 2]
    assert [(f.line, f.handling) for f in kernel] == [(2, "manual")]  # cell 2's line 2 is not in helper_cuda


def test_an_assert_on_a_parsed_toolkit_version_is_no_gate(tmp_path):
    fs = _scan(tmp_path, """\
        import subprocess

        def version(home):
            out = subprocess.check_output([home + "/bin/nvcc", "-V"], text=True).split()
            major, minor = out[out.index("release") + 1].split(".")[:2]
            assert int(minor) < 100
            if int(major) >= 12:
                return 12
            return int(major)
        """)
    assert _lines(fs, "cuda-version-gate") == {7}


def test_a_cuda_only_library_object_handed_to_a_parameter(tmp_path):
    fs = _scan(tmp_path, """\
        from pynvml.smi import nvidia_smi

        def used_memory(smi, device=0):
            return smi.DeviceQuery("memory.used")["gpu"][device]

        def plain(table):
            return table.get("x")

        smi = nvidia_smi.getInstance()
        print(used_memory(smi), plain({}))
        """)
    assert _lines(fs, "cuda-library") == {1, 4, 9}


def test_a_builtin_handed_a_toolkit_version_is_not_followed():
    """``str(version)`` hands nothing to a function of the file: ``str`` is not followed (every ``str(`` of the
    file would become a trigger), while the file's own function and its parameter are."""
    import ast

    from ascend_compat.analysis.visitor import PyAnalyzer

    text = ("import torch\n\n\ndef flags(version):\n    return version >= 12\n\n\n"
            "v = torch.version.cuda\nname = str(v)\nargs = flags(v)\n")
    an = PyAnalyzer("m.py", text)
    an.feed(ast.parse(text))
    an.finish()
    assert "str" not in an.dynamic_names
    assert {"v", "flags", "version"} <= an.dynamic_names
    assert 5 in {f.line for f in an.findings if f.rule == "cuda-version-gate"}  # the gate inside flags


def test_only_names_a_rule_reports_through_are_followed(tmp_path):
    """A name bound to a part of torch.distributed no rule reports (``Shard``, a process group, the module) is not
    followed: every line naming it would be visited for nothing. A name bound to ``ReduceOp`` is: ``R.AVG`` holds
    no trigger word."""
    import ast

    from ascend_compat.analysis.visitor import PyAnalyzer

    text = ("import torch.distributed as dist\nfrom torch.distributed.tensor import Shard\nR = dist.ReduceOp\n"
            "group = dist.group.WORLD\n\n\ndef f(t):\n    dist.all_reduce(t, op=R.AVG, group=group)\n"
            "    return Shard(0)\n")
    an = PyAnalyzer("m.py", text)
    an.feed(ast.parse(text))
    an.finish()
    assert "R" in an.dynamic_names
    assert not {"dist", "Shard", "group"} & an.dynamic_names
    p = tmp_path / "m.py"
    p.write_text(text + "\n".join(f"padding_{i} = {i}" for i in range(200)) + "\n")
    assert 8 in _lines(scan_file(str(p)).findings, "reduce-op-avg")


def test_a_device_generic_librarys_names_are_not_followed_but_its_cuda_only_part_is(tmp_path):
    """DeepSpeed is device-generic (no finding for its use) except ``deepspeed.ops``: ``logger`` from it is not
    followed (each line naming it would be visited for nothing); ``deepspeed`` itself is, since
    ``deepspeed.ops.adam.FusedAdam(...)`` holds no trigger word."""
    import ast

    from ascend_compat.analysis import scan
    from ascend_compat.analysis.visitor import PyAnalyzer

    text = ("import deepspeed\nfrom deepspeed.utils import logger\n\n\ndef make(params):\n    logger.info('x')\n"
            "    return deepspeed.ops.adam.FusedAdam(params)\n")
    assert scan._import_seeds(text, None, "m", "m.py") == {"deepspeed"}
    an = PyAnalyzer("m.py", text)
    an.feed(ast.parse(text))
    assert "deepspeed" in an.dynamic_names and "logger" not in an.dynamic_names
    p = tmp_path / "m.py"
    p.write_text(text + "\n".join(f"padding_{i} = {i}" for i in range(200)) + "\n")
    assert _lines(scan_file(str(p)).findings, "cuda-library") == {7}
