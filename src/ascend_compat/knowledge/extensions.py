"""C++/CUDA extension builds in CUDA code and what to do on Ascend (records of kind ``"extension"``).

The shim refuses CUDA builds without a CUDA toolkit (``cuda_shim/patches/cpp_extension.py``), with
the record's reason and advice; check reports them under ``cuda-extension``. ``BY_QUALNAME`` maps
the qualified names check resolves to their record.
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge.records import AUTO, MANUAL, Construct

_REFUSED = "CUDAExtensionUnsupported"

RECORDS: tuple[Construct, ...] = (
    Construct("extension", "CUDAExtension", "cuda-extension", MANUAL, "torch_npu.utils.cpp_extension.NpuExtension",
              "CUDA C++ cannot be compiled or run on an Ascend NPU",
              "port the kernels to Ascend C custom operators or torch_npu ops, and build the C++ parts with "
              "torch_npu.utils.cpp_extension.NpuExtension.",
              "from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('ext', ['ext.cu'])", _REFUSED,
              fixed="from torch.utils.cpp_extension import CppExtension\nprint(CppExtension('ext', ['ext.cpp']).name)",
              fixed_expect="ext"),
    Construct("extension", "load(..., extra_cuda_cflags=...)", "cuda-extension", MANUAL, None,
              "load() compiles its .cu sources with nvcc into GPU code, which an Ascend NPU cannot run",
              "port the .cu kernels to Ascend C or torch operations, then load only the C++ sources.",
              "from torch.utils.cpp_extension import load\nload('ext', ['ext.cu'], extra_cuda_cflags=['-O3'])",
              _REFUSED),
    Construct("extension", "load_inline(..., cuda_sources=...)", "cuda-extension", MANUAL, None,
              "load_inline() compiles cuda_sources with nvcc into GPU code, which an Ascend NPU cannot run",
              "replace the CUDA kernel with torch operations, or port it to an Ascend C custom operator.",
              "from torch.utils.cpp_extension import load_inline\n"
              "load_inline('ext', '', cuda_sources='__global__ void k() {}')", _REFUSED,
              fixed="import torch\nprint((torch.ones(2, device='cuda') * 2).device.type)", fixed_expect="npu"),
    Construct("extension", "BuildExtension", None, AUTO, "BuildExtension",
              "torch_npu builds NpuExtension and CppExtension modules with torch's own BuildExtension",
              "keep BuildExtension as the build_ext command.",
              "import setuptools\nfrom torch.utils.cpp_extension import BuildExtension, CppExtension\n"
              "d = setuptools.Distribution({'ext_modules': [CppExtension('ext', ['ext.cpp'])], "
              "'cmdclass': {'build_ext': BuildExtension}})\ncmd = d.get_command_obj('build_ext')\n"
              "cmd.ensure_finalized()\nprint(type(cmd).__name__)", "BuildExtension",
              unreported="BuildExtension builds C++ and NPU extensions unchanged, so nothing needs an edit or the "
                         "shim; the CUDA sources it may build are reported where they are declared "
                         "(CUDAExtension, load, load_inline, .cu files)"),
)

BY_NAME: dict[str, Construct] = {r.name: r for r in RECORDS}

#: qualified names check resolves -> the record reporting them
BY_QUALNAME: dict[str, Construct] = {
    "torch.utils.cpp_extension.CUDAExtension": BY_NAME["CUDAExtension"],
    "torch.utils.cpp_extension.load": BY_NAME["load(..., extra_cuda_cflags=...)"],
    "torch.utils.cpp_extension.load_inline": BY_NAME["load_inline(..., cuda_sources=...)"],
}


def refusal(what: str, record: Optional[Construct] = None) -> str:
    """The error text for a refused CUDA build of ``what`` (the record's reason and advice)."""
    rec = record or BY_NAME["CUDAExtension"]
    advice = rec.advice[0].upper() + rec.advice[1:]
    return f"{what}: {rec.reason} (and no CUDA toolkit is installed). {advice}"


# ------------------------------------------------------------------ nvcc command lines
#: options only NVIDIA's CUDA compiler driver accepts (nvcc's "Command Option Reference"; no host compiler takes
#: them): a string holding one is a piece of a CUDA build, wherever the build script keeps it
NVCC_OPTIONS: tuple[str, ...] = (
    "-gencode", "--generate-code", "--gpu-architecture", "--gpu-code", "--use_fast_math", "-use_fast_math",
    "--expt-relaxed-constexpr", "-expt-relaxed-constexpr", "--expt-extended-lambda", "-expt-extended-lambda",
    "--extended-lambda", "-maxrregcount", "--maxrregcount", "--ptxas-options", "-Xptxas", "-Xcompiler",
    "--compiler-options", "-ccbin", "--compiler-bindir", "-lineinfo", "--generate-line-info", "--relocatable-device-code",
    "-rdc=", "--default-stream", "-Xcudafe", "--resource-usage", "-Xnvlink", "--nvlink-options", "--ftz=", "--prec-div=",
    "--prec-sqrt=", "--fmad=", "--keep-device-functions", "--allow-unsupported-compiler",
    "--device-debug", "--device-c", "--device-w", "--device-link", "--extra-device-vectorization",
    "--source-in-ptx", "--dlink-time-opt", "-dlto",
    # macros of the CUDA headers (the half/bfloat16 operator switches -U__CUDA_NO_HALF_OPERATORS__ every torch
    # extension build sets for nvcc, -DCUDA_HAS_FP16=1, -D__CUDA_ARCH_LIST__...): only a CUDA build defines them
    "-U__CUDA_NO_", "-D__CUDA_NO_", "-U__CUDA_", "-D__CUDA_", "-UCUDA_", "-DCUDA_",
)
#: GPU architecture names as builds spell them: ``arch=compute_80,code=sm_80``, ``-arch=sm_90a``, ``compute_75``
NVCC_ARCH = r"(?:-+(?:arch|gpu-architecture|code)[= ]?)?(?:arch=)?(?:compute|sm|lto)_\d{2,3}[af]?(?:,code=\S*)?"
#: how a GPU architecture string starts (lower case)
NVCC_ARCH_HEADS = ("arch=", "compute_", "sm_", "lto_", "-arch", "--gpu-architecture", "-code", "--code")


def nvcc_option(value: str) -> Optional[str]:
    """The nvcc-only option or GPU architecture ``value`` starts with (at its first character), or None."""
    import re

    text = value
    if not text or text[0] not in "-acsl":
        return None
    for opt in NVCC_OPTIONS:
        if text.startswith(opt) and (opt.endswith(("=", "_")) or len(text) == len(opt) or not text[len(opt)].isalnum()):
            return opt
    m = re.match(NVCC_ARCH, text)
    return m.group(0) if m is not None and (m.end() == len(text) or not text[m.end()].isalnum()) else None


def runs_nvcc(value: str) -> bool:
    """Whether a string is the nvcc program (``"nvcc"``, ``".../bin/nvcc"``, ``"nvcc -V"``)."""
    head = value.strip().split(" ", 1)[0].replace("\\", "/")
    return head.rsplit("/", 1)[-1] in ("nvcc", "nvcc.exe")
