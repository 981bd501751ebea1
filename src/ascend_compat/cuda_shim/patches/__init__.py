"""One module per CUDA concept; each has ``patches() -> list[Change]``.

:data:`ORDER` is the order they are applied in (and reverted in reverse). The environment is not
here: it is translated before the backend initialises, and the third-party libraries' changes
(:mod:`ascend_compat.ecosystem`) are added by :mod:`ascend_compat._activation`, which sits above
both.
"""
ORDER = (
    "factories",
    "tensor",
    "cuda_namespace",
    "amp",
    "detection",
    "backends",
    "distributed",
    "parallel_comm",
    "serialization",
    "libraries",
    "multiprocessing",
    "storage",
    "profiler",
    "compile",
    "cpp_extension",
)
