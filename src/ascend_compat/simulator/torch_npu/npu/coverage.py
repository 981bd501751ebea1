"""How the simulated ``torch.npu`` honours each public name of torch_npu's ``torch_npu.npu``.

- ``IMPLEMENTED``: same semantics as torch_npu (values come from the simulated device).
- ``EMULATED``: the API works and answers consistently, but what it controls does not exist on a
  host simulation (asynchrony, caches, compiler switches, dumps, device graphs); each function's
  docstring says what is recorded or approximated.
- ``REFUSED``: calling it raises ``SimulatorUnsupportedError`` (a RuntimeError) naming the API and why.
Names of other torch_npu versions that this module does not define are added at build time as
refusing stubs (``LATE_REFUSED``), so no public name is ever silently missing.
"""
from __future__ import annotations

IMPLEMENTED = frozenset("""
is_initialized init is_available device_count set_device current_device get_device_name get_device_properties
get_device_capability device device_of current_blas_handle is_bf16_supported get_soc_version get_cann_version
is_support_inf_nan npu_check_overflow get_npu_overflow_flag clear_npu_overflow_flag
mem_get_info caching_allocator_alloc caching_allocator_delete get_per_process_memory_fraction
set_per_process_memory_fraction empty_cache memory_stats memory_stats_as_nested_dict reset_accumulated_memory_stats
reset_peak_memory_stats reset_max_memory_allocated reset_max_memory_cached memory_allocated max_memory_allocated
memory_reserved max_memory_reserved memory_cached max_memory_cached memory_summary get_allocator_backend
manual_seed manual_seed_all seed seed_all initial_seed get_rng_state set_rng_state get_rng_state_all
set_rng_state_all default_generators
get_amp_supported_dtype is_autocast_enabled set_autocast_enabled get_autocast_dtype set_autocast_dtype amp
BoolStorage ByteStorage ShortStorage LongStorage IntStorage HalfStorage CharStorage DoubleStorage FloatStorage
BFloat16Storage BoolTensor ByteTensor CharTensor DoubleTensor FloatTensor HalfTensor IntTensor LongTensor
ShortTensor BFloat16Tensor CubeMathType enable_deterministic_with_backward disable_deterministic_with_backward
flash_sdp_enabled enable_flash_sdp mem_efficient_sdp_enabled enable_mem_efficient_sdp math_sdp_enabled
enable_math_sdp sdp_kernel preferred_linalg_library set_mm_bmm_format_nd get_mm_bmm_format_nd
""".split())

EMULATED = frozenset("""
synchronize can_device_access_peer utilization ipc_collect set_op_timeout_ms check_uce_in_memory stress_detect
set_sync_debug_mode get_sync_debug_mode set_task_queue_enable get_task_queue_enable
Stream Event ExternalStream ExternalEvent SyncLaunchStream StreamContext stream set_stream current_stream
default_stream set_stream_limit reset_stream_limit get_stream_limit set_device_limit get_device_limit
empty_virt_addr_cache memory_snapshot MemPool MemPoolContext use_mem_pool host_empty_cache host_memory_stats
host_memory_stats_as_nested_dict reset_accumulated_host_memory_stats reset_peak_host_memory_stats
NPUGraph graph graph_pool_handle is_current_stream_capturing make_graphed_callables super_kernel_scope_begin
super_kernel_scope_end NpuGraphOpHandler register_npu_graph_handler
set_option config matmul conv set_aoe set_compile_mode is_jit_compile_false init_dump set_dump finalize_dump
set_deterministic_level use_compatible_impl are_compatible_impl_enabled mstx aclnn
""".split())

REFUSED = frozenset("""
stop_device restart_device npurt obfuscation_initialize obfuscation_finalize obfuscation_calculate
NPUPluggableAllocator change_current_allocator graph_task_group_begin graph_task_group_end
graph_task_update_begin graph_task_update_end npugraph_ex
""".split())

# submodules: their attributes share the status of the same-named top-level function
SUBMODULES = frozenset("""
amp aclnn autocast_utils backends deterministic graphs memory mstx npu_config npugraph_ex random streams utils
""".split())


def status(name: str) -> str:
    """``"implemented"``, ``"emulated"``, ``"refused"`` or ``"submodule"`` for a top-level name; KeyError otherwise."""
    for label, names in (("implemented", IMPLEMENTED), ("emulated", EMULATED), ("refused", REFUSED)):
        if name in names:
            return label
    if name in SUBMODULES:
        return "submodule"
    raise KeyError(name)
