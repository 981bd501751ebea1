"""Static analysis of CUDA PyTorch code for Ascend: ``check`` (find) and ``migrate`` (rewrite).

Nothing here imports or runs the analysed code; it reads files and walks syntax trees.
Entry points: :func:`ascend_compat.analysis.scan.scan_paths` (findings),
:func:`ascend_compat.analysis.difficulty.rate` (ratings), :mod:`ascend_compat.analysis.report`
(writers) and :mod:`ascend_compat.analysis.migrate` (libcst rewrites, optional dependency).
"""
