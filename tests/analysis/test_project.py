"""Project-wide resolution: what one checked module tells check about another (our own small projects)."""
from __future__ import annotations

import textwrap

from ascend_compat.analysis.project import module_name, resolve_relative
from ascend_compat.analysis.scan import ScanOptions, scan_paths


def _project(tmp_path, files: dict):
    for rel, src in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    return tmp_path


def _check(root, **opts):
    res = scan_paths([str(root)], use_gitignore=False, jobs=1, opts=ScanOptions(**opts))
    return {str(r.path)[len(str(root)) + 1:]: r.findings for r in res.files}


def _lines(findings, rule=None):
    return {f.line for f in findings if rule is None or f.rule == rule}


def test_module_names_follow_packages(tmp_path):
    _project(tmp_path, {"repo/pkg/__init__.py": "", "repo/pkg/sub/__init__.py": "", "repo/pkg/sub/m.py": "",
                        "repo/scripts/run.py": ""})
    assert module_name(str(tmp_path / "repo/pkg/sub/m.py")) == "pkg.sub.m"
    assert module_name(str(tmp_path / "repo/pkg/sub/__init__.py")) == "pkg.sub"
    assert module_name(str(tmp_path / "repo/scripts/run.py")) == "run"
    assert resolve_relative("pkg.sub.m", False, 2, "utils") == "pkg.utils"
    assert resolve_relative("pkg.sub", True, 1, None) == "pkg.sub"


def test_a_device_constant_from_another_module_in_a_comparison(tmp_path):
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/system.py": """\
            import torch
            if torch.version.cuda is not None:
                SYSTEM = "cuda"
            else:
                SYSTEM = "cpu"
            """,
        "pkg/layer.py": """\
            from .system import SYSTEM
            if SYSTEM == "cuda":
                import fast_kernels
            LIMIT = "cuda"
            """,
    })
    got = _check(root)
    assert _lines(got["pkg/layer.py"], "device-compare") == {2}
    alone = _check(root, project=False)
    assert _lines(alone["pkg/layer.py"]) == set()


def test_a_constant_another_module_uses_as_a_device_is_reported_where_it_is_defined(tmp_path):
    root = _project(tmp_path, {
        "app/__init__.py": "",
        "app/constants.py": 'ACCEL = "cuda"\nOTHER = "cuda"\n',
        "app/train.py": """\
            from app.constants import ACCEL
            def run(model):
                return model.to(ACCEL)
            """,
    })
    got = _check(root)
    assert _lines(got["app/constants.py"], "device-string") == {1}


def test_a_call_of_another_modules_cuda_builder_also_without_trigger_words(tmp_path):
    root = _project(tmp_path, {
        "megapkg/__init__.py": "",
        "megapkg/fused/__init__.py": """\
            from torch.utils import cpp_extension
            def load(args):
                return cpp_extension.load(name="fused", sources=["scaled_softmax.cu"], verbose=args.verbose)
            """,
        "megapkg/initialize.py": """\
            from megapkg import fused
            def initialize(args):
                fused.load(args)
            """,
        "megapkg/wrap.py": """\
            from megapkg.initialize import initialize
            def setup(args):
                initialize(args)
            """,
    })
    got = _check(root)
    assert _lines(got["megapkg/initialize.py"], "cuda-extension") == {3}
    # a helper calling a helper that builds CUDA code builds CUDA code too (a second round)
    assert _lines(got["megapkg/wrap.py"], "cuda-extension") == {3}


def test_a_loader_its_callers_feed_cuda_sources(tmp_path):
    root = _project(tmp_path, {
        "utils/__init__.py": "",
        "utils/custom_ops.py": """\
            import torch.utils.cpp_extension
            def get_plugin(module_name, sources, **build_kwargs):
                return torch.utils.cpp_extension.load(name=module_name, sources=sources, **build_kwargs)
            """,
        "utils/ops/__init__.py": "",
        "utils/ops/act.py": """\
            import os
            from .. import custom_ops
            def init():
                srcs = [os.path.join("d", s) for s in ["act.cpp", "act.cu"]]
                return custom_ops.get_plugin("act", sources=srcs, extra_cuda_cflags=["--use_fast_math"])
            """,
        "utils/ops/cpu_only.py": """\
            from ..custom_ops import get_plugin
            plugin = get_plugin("cpu", sources=["a.cpp"])
            """,
    })
    got = _check(root)
    assert _lines(got["utils/custom_ops.py"], "cuda-extension") == {3}
    alone = _check(root, project=False)
    assert _lines(alone["utils/custom_ops.py"]) == set()


def test_imports_of_extension_modules_the_project_builds_from_cuda(tmp_path):
    root = _project(tmp_path, {
        "setup.py": """\
            from setuptools import setup
            from torch.utils.cpp_extension import BuildExtension, CppExtension
            setup(ext_modules=[
                CppExtension("mylib.block_cuda", sources=["csrc/block.cpp", "csrc/block_kernel.cu"]),
                CppExtension("mylib.cpu_ops", sources=["csrc/cpu.cpp"]),
                CppExtension("_raster_c", sources=["csrc/raster.cu"]),
            ], cmdclass={"build_ext": BuildExtension})
            """,
        "mylib/__init__.py": "",
        "mylib/block.py": """\
            try:
                from mylib import block_cuda
            except ImportError:
                block_cuda = None
            from mylib import cpu_ops
            """,
        "mylib/ops.py": "import _raster_c\nX = _raster_c.rasterize\n",
    })
    got = _check(root)
    assert _lines(got["mylib/block.py"], "cuda-extension") == {2}
    assert _lines(got["mylib/ops.py"], "cuda-extension") == {1, 2}  # the import and a use


def test_triton_kernels_and_version_queries_of_other_modules(tmp_path):
    root = _project(tmp_path, {
        "kpkg/__init__.py": "",
        "kpkg/kernels.py": """\
            import triton
            import triton.language as tl
            @triton.jit
            def _scale(x_ptr, n):
                pass
            """,
        "kpkg/api.py": """\
            from .kernels import _scale
            def scale(x):
                _scale[(1,)](x, x.numel())
            """,
        "kpkg/toolkit.py": """\
            import subprocess
            def bare_metal_version(home):
                out = subprocess.check_output([home + "/bin/nvcc", "-V"], text=True)
                return int(out.split("release ")[1].split(".")[0])
            """,
        "kpkg/build.py": """\
            from kpkg.toolkit import bare_metal_version
            major = bare_metal_version("/usr/local")
            if major >= 11:
                flags = ["-O3"]
            """,
    })
    got = _check(root)
    assert _lines(got["kpkg/api.py"], "triton-kernel") == {1, 3}  # the import of the kernel, its launch
    assert _lines(got["kpkg/build.py"], "cuda-version-gate") == {3}


def test_imports_of_the_projects_triton_code(tmp_path):
    root = _project(tmp_path, {
        "ops/__init__.py": "",
        "ops/fused.py": """\
            import torch
            import triton
            import triton.language as tl

            @triton.jit
            def _add(a, b, c, n, BLOCK: tl.constexpr):
                pass

            def fused_add(a, b):
                c = torch.empty_like(a)
                _add[(triton.cdiv(a.numel(), 16),)](a, b, c, a.numel(), BLOCK=16)
                return c

            def describe():
                return "elementwise add"
            """,
        "ops/check.py": """\
            def check(a, b):
                from .fused import fused_add
                return fused_add(a, b)
            """,
        "ops/optional.py": """\
            try:
                from ops import fused
            except ImportError:
                fused = None
            """,
        "ops/plain.py": """\
            from ops.fused import describe
            print(describe())
            """,
    })
    got = _check(root)
    assert [(f.line, f.handling) for f in got["ops/check.py"] if f.rule == "triton-kernel"] == [(2, "partial")]
    optional = [f for f in got["ops/optional.py"] if f.rule == "triton-kernel"]
    assert [(f.line, f.handling) for f in optional] == [(2, "partial")]
    assert got["ops/plain.py"] == []


def test_facts_are_cached_and_the_second_pass_follows_a_changed_helper(tmp_path):
    """A warm run gives the findings of the cold one; other.py, which the facts reach but cannot change, keeps
    its first-pass result (the second pass's empty placeholder for it was cached as its result: a warm check of
    torch lost 985 of 5217 findings that way)."""
    root = _project(tmp_path, {
        "p/__init__.py": "",
        "p/helpers.py": "from torch.utils import cpp_extension\n"
                        "def build():\n    return cpp_extension.load(name='k', sources=['k.cu'])\n",
        "p/main.py": "from p.helpers import build\nbuild()\n",
        "p/other.py": "import torch\nfrom p import helpers\nx = torch.zeros(1).cuda()\n",
    })
    cache = tmp_path / "cache"
    first = _check(root, cache_dir=str(cache))
    again = _check(root, cache_dir=str(cache))
    assert _lines(first["p/main.py"], "cuda-extension") == _lines(again["p/main.py"], "cuda-extension") == {2}
    assert _lines(first["p/other.py"]) == {3}
    assert {k: _lines(v) for k, v in again.items()} == {k: _lines(v) for k, v in first.items()}
    (root / "p/helpers.py").write_text("def build():\n    return 1\n")
    after = _check(root, cache_dir=str(cache))
    assert _lines(after["p/main.py"]) == set()


def test_a_guarded_import_of_a_project_cuda_extension_and_its_uses_are_optional(tmp_path):
    from ascend_compat.analysis.difficulty import rate_findings

    root = _project(tmp_path, {
        "setup.py": "from torch.utils.cpp_extension import CppExtension\n"
                    "ext = CppExtension('pkg.block_cuda', sources=['k.cu'])\n",
        "pkg/__init__.py": "",
        "pkg/block.py": """\
            try:
                from pkg import block_cuda
                BUILT = True
            except ImportError:
                BUILT = False
            def run(x):
                return block_cuda.forward(x) if BUILT else x
            """,
        "pkg/plain.py": "import pkg.block_cuda as ext\ny = ext.forward(1)\n",
    })
    got = _check(root)
    assert _lines(got["pkg/block.py"], "cuda-extension") == {2, 7}
    assert {f.handling for f in got["pkg/block.py"]} == {"partial"}
    assert rate_findings(got["pkg/block.py"]).level == "moderate"
    assert {f.handling for f in got["pkg/plain.py"]} == {"manual"}



def test_a_file_importing_the_projects_triton_code_is_rated_by_its_own_findings(tmp_path):
    from ascend_compat.analysis.difficulty import rate_findings

    root = _project(tmp_path, {
        "k/__init__.py": "",
        "k/scale.py": """\
            import triton

            @triton.jit
            def _scale(x):
                pass

            def scale(x):
                _scale[(1,)](x)
            """,
        "k/user.py": """\
            import torch
            from k.scale import scale

            def step(x):
                return scale(x.cuda())
            """,
    })
    got = _check(root)
    assert _lines(got["k/user.py"], "triton-kernel") == {2}
    assert rate_findings(got["k/user.py"]).level == "easy"  # .cuda() is handled; the kernel is k/scale.py's
    assert rate_findings(got["k/scale.py"]).level == "hard"


def test_a_call_through_an_alias_of_another_modules_cuda_builder(tmp_path):
    """``from pkg.build import build_ops as f``: the local name is no fact's name, the name it is bound to is; its
    use far from any trigger word (the sparse analysis of a long file) is followed and reported."""
    padding = "".join(f"padding_{i} = {i}\n" for i in range(220))
    root = _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/build.py": """\
            from torch.utils import cpp_extension
            def build_ops():
                return cpp_extension.load(name="ops", sources=["ops.cu"])
            """,
        "pkg/run.py": "from pkg.build import build_ops as f\n" + padding + "\n\ndef main():\n    return f()\n",
    })
    got = _check(root)
    assert _lines(got["pkg/run.py"], "cuda-extension") == {225}
