#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/npu_api.json``: the public names of ``torch_npu.npu`` and of
``torch_npu`` per torch_npu minor version, read from wheels with ``ast`` (nothing is imported).

Per version (the newest wheel of each minor version in ``--wheel-dir``):
  * ``npu``: ``torch_npu/npu/__init__.py``'s ``__all__``; plus the public names torch_npu binds there
    outside ``__all__`` that its docs name (``get_soc_version``, ``is_support_inf_nan``,
    ``npu_check_overflow``, the sdp switches, ``default_generators``, ...), kept only when the module
    really binds them (star imports resolved); plus the public submodules (``amp``, ``memory``, ...)
    and, as dotted ``"<submodule>.<name>"`` entries, each submodule's ``__all__`` (``amp.autocast``,
    ``utils.get_cann_version``; for ``mstx``, which ``torch.npu`` rebinds to the class of that name,
    the class's members: ``mstx.range_start``);
  * ``npu_all``: the ``__all__`` alone;
  * ``torch_npu``: top-level ``torch_npu.__all__``: its literal list, the lazily exported Python
    symbols (``_LAZY_PYTHON_SYMBOLS``), and ``utils/exposed_api.py``'s ``public_npu_functions``
    (custom ops torch_npu re-exports as ``torch_npu.<op>``).

Usage: python tools/gen_npu_api.py --wheel-dir DIR [--output PATH]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pyast import bound_names, class_members, literal_assignment, module_all, read_module, submodules  # noqa: E402
from _sources import WheelSource, find_wheels, version_tuple, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "ascend_compat" / "data" / "npu_api.json"

# Public names outside torch_npu.npu.__all__ that torch_npu's documentation and users rely on;
# each is recorded for a version only if that version's torch_npu/npu/__init__.py binds it.
DOCUMENTED_EXTRAS = (
    "get_soc_version", "is_support_inf_nan", "npu_check_overflow", "default_generators",
    "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
    "math_sdp_enabled", "enable_math_sdp", "sdp_kernel", "preferred_linalg_library",
    "get_cann_version", "config", "matmul", "conv", "mstx",
)


def npu_tables(src: WheelSource) -> Dict[str, List[str]]:
    read = src.read_text
    init = read("torch_npu/npu/__init__.py")
    if init is None:
        raise ValueError(f"{src.wheel_filename} has no torch_npu/npu/__init__.py")
    npu_all = module_all(init) or []
    bound = bound_names(read, "torch_npu.npu")
    extras = [n for n in DOCUMENTED_EXTRAS if n in bound]
    subs = submodules(src.names(), "torch_npu/npu")
    dotted: List[str] = []
    for sub in subs:
        text = read_module(read, f"torch_npu.npu.{sub}")
        if text is None:
            continue
        # `from .mstx import mstx` rebinds torch.npu.mstx to the class: its members are the API
        members = class_members(text, sub) if re.search(rf"from \.{sub} import[^\n]*\b{sub}\b", init) else None
        names = members if members is not None else module_all(text)
        if names is None:  # no __all__: its public top-level names
            names = sorted(n for n in bound_names(read, f"torch_npu.npu.{sub}") if not n.startswith("_"))
        dotted += [f"{sub}.{n}" for n in names]
    top = (read("torch_npu/__init__.py") or "")
    torch_npu_all = list(module_all(top) or [])
    exports = read("torch_npu/_init/core/_exports.py")
    lazy = literal_assignment(exports, "_LAZY_PYTHON_SYMBOLS") if exports else None
    if isinstance(lazy, dict):
        torch_npu_all += list(lazy)
    exposed_src = read("torch_npu/utils/exposed_api.py")
    exposed = literal_assignment(exposed_src, "public_npu_functions") if exposed_src else None
    torch_npu_all += list(exposed or [])
    return {
        "npu": sorted(set(npu_all) | set(extras) | set(subs) | set(dotted)),
        "npu_all": sorted(set(npu_all)),
        "torch_npu": sorted(set(torch_npu_all)),
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel-dir", type=Path, required=True)
    ap.add_argument("--output", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    versions: Dict[str, dict] = {}
    sources: Dict[str, str] = {}
    for key, src in sorted(find_wheels(args.wheel_dir).items(), key=lambda kv: version_tuple(kv[0])):
        if version_tuple(key) < version_tuple("2.1"):
            continue
        versions[key] = npu_tables(src)
        sources[key] = f"torch_npu {src.version} wheel ({src.wheel_filename})"
        v = versions[key]
        print(f"read {src.wheel_filename}: torch_npu.npu __all__ {len(v['npu_all'])}, "
              f"npu names incl. extras/submodules {len(v['npu'])}, torch_npu.__all__ {len(v['torch_npu'])}")
    if not versions:
        print("error: no torch_npu wheels found in --wheel-dir", file=sys.stderr)
        return 2
    data = {
        "_source": {"description": "public names of torch_npu.npu and torch_npu per torch_npu minor version, "
                                   "read from the wheels' Python sources with ast", "versions": sources},
        "_generated_by": "tools/gen_npu_api.py",
        "versions": versions,
    }
    write_json(args.output, data, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
