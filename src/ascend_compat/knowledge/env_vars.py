"""CUDA / NCCL environment variables and their Ascend counterparts (HCCL_* / ASCEND_RT_*).

One record per variable (or ``*`` prefix). The shim translates those with ``shim_maps`` before the
backend starts, so check rates them ``auto``; variables with an Ascend counterpart the shim does not
copy are ``partial`` (set it yourself); the rest are ignored on Ascend.
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge.records import AUTO, MANUAL, PARTIAL, EnvVar, Versions

#: torch reads the TORCH_NCCL_* spellings since 2.2 (before: NCCL_*, still read with a deprecation warning)
_TORCH_NCCL = Versions(torch=">=2.2")

_IGNORED_NCCL = "ignored on Ascend: HCCL reads only HCCL_* variables"

RECORDS: tuple[EnvVar, ...] = (
    EnvVar("CUDA_VISIBLE_DEVICES", "cuda-env", AUTO, "ASCEND_RT_VISIBLE_DEVICES",
           "the shim maps it, reading it as CUDA does (-1 or an invalid id hides the devices from there on) "
           "and sorting the ids, which torch_npu needs ascending", "visible_devices", True, ("0", "0")),
    EnvVar("PYTORCH_CUDA_ALLOC_CONF", "cuda-env", AUTO, "PYTORCH_NPU_ALLOC_CONF",
           "the shim maps it; keys the NPU allocator does not know are dropped with a warning",
           "alloc_conf", True, ("expandable_segments:True", "expandable_segments:True")),
    EnvVar("PYTORCH_ALLOC_CONF", "cuda-env", AUTO, "PYTORCH_NPU_ALLOC_CONF",
           "the shim maps it like PYTORCH_CUDA_ALLOC_CONF", "alloc_conf", True,
           ("expandable_segments:True", "expandable_segments:True")),
    EnvVar("CUDA_LAUNCH_BLOCKING", "cuda-env", AUTO, "ASCEND_LAUNCH_BLOCKING",
           "the shim maps it (synchronous launches for debugging)", None, True, ("1", "1")),
    EnvVar("NCCL_SOCKET_IFNAME", "nccl-env", AUTO, "HCCL_SOCKET_IFNAME",
           "the shim maps it", None, True, ("eth0", "eth0")),
    EnvVar("NCCL_SOCKET_FAMILY", "nccl-env", AUTO, "HCCL_SOCKET_FAMILY",
           "the shim maps it", None, True, ("AF_INET", "AF_INET")),
    EnvVar("NCCL_BUFFSIZE", "nccl-env", AUTO, "HCCL_BUFFSIZE",
           "the shim maps it, converting bytes to the MB HCCL_BUFFSIZE takes", "bytes_to_mb", True,
           ("4194304", "4")),
    EnvVar("TORCH_NCCL_ASYNC_ERROR_HANDLING", "nccl-env", AUTO, "HCCL_ASYNC_ERROR_HANDLING",
           "the shim maps it", None, True, ("1", "1"), versions=_TORCH_NCCL),
    EnvVar("NCCL_ASYNC_ERROR_HANDLING", "nccl-env", AUTO, "HCCL_ASYNC_ERROR_HANDLING",
           "the shim maps it", None, True, ("1", "1")),
    EnvVar("TORCH_NCCL_BLOCKING_WAIT", "nccl-env", AUTO, "HCCL_BLOCKING_WAIT",
           "the shim maps it", None, True, ("1", "1"), versions=_TORCH_NCCL),
    EnvVar("NCCL_BLOCKING_WAIT", "nccl-env", AUTO, "HCCL_BLOCKING_WAIT",
           "the shim maps it", None, True, ("1", "1")),
    EnvVar("TORCH_NCCL_DESYNC_DEBUG", "nccl-env", AUTO, "HCCL_DESYNC_DEBUG",
           "the shim maps it", None, True, ("1", "1"), versions=_TORCH_NCCL),
    EnvVar("NCCL_DETERMINISTIC", "nccl-env", AUTO, "HCCL_DETERMINISTIC",
           "the shim maps it", None, True, ("1", "1")),
    EnvVar("NCCL_DEBUG", "nccl-env", PARTIAL, "ASCEND_GLOBAL_LOG_LEVEL",
           "HCCL logs through the CANN log (ASCEND_GLOBAL_LOG_LEVEL=1 for INFO, "
           "ASCEND_SLOG_PRINT_TO_STDOUT=1 to print it)"),
    EnvVar("NCCL_TIMEOUT", "nccl-env", PARTIAL, "HCCL_CONNECT_TIMEOUT",
           "HCCL splits it into HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT"),
    EnvVar("NCCL_ALGO", "nccl-env", PARTIAL, "HCCL_ALGO", "HCCL_ALGO exists but takes different values"),
    EnvVar("NCCL_IB_*", "nccl-env", PARTIAL, "HCCL_INTRA_ROCE_ENABLE",
           "HCCL picks RoCE/HCCS links itself; RoCE is configured per host"),
    EnvVar("NCCL_P2P_*", "nccl-env", PARTIAL, "HCCL_INTRA_PCIE_ENABLE", "HCCL chooses intra-node links itself (HCCS)"),
    EnvVar("NCCL_NVLS_*", "nccl-env", PARTIAL, None, "NVLink SHARP has no Ascend counterpart"),
    EnvVar("NCCL_*", "nccl-env", PARTIAL, None, _IGNORED_NCCL),
    EnvVar("TORCH_NCCL_*", "nccl-env", PARTIAL, None,
           "a ProcessGroupNCCL option; HCCL has its own HCCL_* settings", versions=_TORCH_NCCL),
    EnvVar("CUDA_DEVICE_ORDER", "cuda-env-other", PARTIAL, None,
           "NPU ids are always in PCI bus order; the variable is ignored"),
    EnvVar("CUDA_DEVICE_MAX_CONNECTIONS", "cuda-env-other", PARTIAL, None,
           "Megatron's overlap setting has no NPU equivalent (MindSpeed handles it)"),
    EnvVar("CUDA_MPS_*", "cuda-env-other", PARTIAL, None,
           "NVIDIA's multi-process service has no Ascend counterpart; the variable is ignored"),
    *(EnvVar(name, "cuda-env-other", PARTIAL, None, f"{what}: read by the CUDA driver or runtime, which the NPU "
             "runtime does not replace; the variable is ignored")
      for name, what in (("CUDA_MODULE_LOADING", "lazy or eager loading of CUDA modules"),
                         ("CUDA_CACHE_PATH", "the CUDA driver's JIT (PTX) cache directory"),
                         ("CUDA_CACHE_DISABLE", "switches off the CUDA driver's JIT cache"),
                         ("CUDA_CACHE_MAXSIZE", "the CUDA driver's JIT cache size"),
                         ("CUDA_FORCE_PTX_JIT", "forces JIT compilation of PTX"),
                         ("CUDA_DISABLE_PTX_JIT", "switches off JIT compilation of PTX"),
                         ("CUDA_AUTO_BOOST", "GPU clock boost"),
                         ("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "GPU core dumps"),
                         ("CUDA_COREDUMP_FILE", "the GPU core dump file"),
                         ("CUDA_DEVICE_WAITS_ON_EXCEPTION", "the GPU debugger's stop on exceptions"))),
    EnvVar("FORCE_CUDA", "cuda-env-other", PARTIAL, None,
           "extension build scripts' switch that forces the CUDA build without a visible GPU; Ascend hosts have no "
           "CUDA toolkit to build with; the CUDA build it steers is reported where it is declared"),
    EnvVar("CUBLAS_*", "cuda-env-other", PARTIAL, None,
           "a cuBLAS setting (CUBLAS_WORKSPACE_CONFIG sizes cuBLAS's workspace for deterministic matmuls): NPU "
           "matmuls do not go through cuBLAS, so it is ignored; torch.use_deterministic_algorithms(True) is the "
           "device-independent switch"),
    EnvVar("CUBLASLT_*", "cuda-env-other", PARTIAL, None,
           "a cuBLASLt setting: NPU matmuls do not go through cuBLASLt, so it is ignored"),
    EnvVar("CUDNN_*", "cuda-env-other", PARTIAL, None,
           "a cuDNN setting (logging, frontend switches): NPU kernels do not go through cuDNN, so it is ignored"),
    EnvVar("NVIDIA_VISIBLE_DEVICES", "cuda-env-other", PARTIAL, "ASCEND_VISIBLE_DEVICES",
           "the NVIDIA container runtime's device list; the Ascend Docker runtime reads ASCEND_VISIBLE_DEVICES"),
    EnvVar("NVIDIA_DRIVER_CAPABILITIES", "cuda-env-other", PARTIAL, None,
           "the NVIDIA container runtime's driver features; ignored on Ascend"),
    EnvVar("NVIDIA_TF32_OVERRIDE", "cuda-env-other", PARTIAL, None,
           "NVIDIA's library-wide TF32 switch; on Ascend HF32 is set with torch.npu.matmul.allow_hf32 and "
           "torch.npu.conv.allow_hf32"),
    EnvVar("CUDA_HOME", "cuda-extension", MANUAL, "ASCEND_HOME_PATH",
           "the CANN toolkit lives under ASCEND_HOME_PATH (or ASCEND_TOOLKIT_HOME)"),
    EnvVar("CUDA_PATH", "cuda-extension", MANUAL, "ASCEND_HOME_PATH",
           "the CANN toolkit lives under ASCEND_HOME_PATH (or ASCEND_TOOLKIT_HOME)"),
    EnvVar("NVCC_*", "cuda-env-other", PARTIAL, None,
           "flags for NVIDIA's CUDA compiler (nvcc's NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, a build script's "
           "NVCC_FLAGS), which Ascend hosts do not have; the CUDA build they steer is reported where it is declared"),
    EnvVar("TORCH_CUDA_ARCH_LIST", "cuda-env-other", PARTIAL, None,
           "CUDA architectures mean nothing on NPU (AscendC ops target a SoC), so the variable is ignored; the CUDA "
           "build it steers is reported where the build is declared"),
)

BY_NAME: dict[str, EnvVar] = {r.name: r for r in RECORDS}

#: variable name -> the Ascend name migrate writes instead (every auto variable but those left to the shim)
RENAMES: dict[str, str] = dict(r.rewrite for r in RECORDS if r.rewrite)


def lookup(name: str) -> Optional[EnvVar]:
    """The record for an environment variable name (exact name first, then the longest prefix)."""
    rec = BY_NAME.get(name)
    if rec is not None:
        return rec
    best = None
    for r in RECORDS:
        if r.name.endswith("*") and name.startswith(r.name[:-1]) and len(name) >= len(r.name):
            if best is None or len(r.name) > len(best.name):
                best = r
    return best
