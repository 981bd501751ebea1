#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/npu_op_schemas.json``: the schema of every custom ``npu::`` op one
torch_npu wheel registers (``torch.ops.npu.<op>``, bound by torch_npu as ``torch_npu.<op>``).

Read from the wheel's ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`` (sections ``custom``
and ``custom_autograd``; the file torch_npu's codegen ``torchnpugen/gen_backend_stubs.py`` registers
the ``npu`` library from), nothing imported. Per op overload (``"npu_format_cast.Tensor"``, default
overload bare): ``schema`` (the ``func:`` string torch_npu passes to ``m.def``), ``exposed`` (listed
as public in the yaml), ``autograd`` (from ``custom_autograd``: torch_npu registers an autograd kernel),
``composite`` (the dispatch key of a ``dispatch:`` entry, e.g. ``CompositeExplicitAutograd``, else
None). The header records the wheel file name, version and sha256, and this script.
``torch_npu.__all__`` is not repeated here: ``npu_api.json`` (``tools/gen_npu_api.py``) holds it.

Usage: python tools/gen_npu_op_schemas.py WHEEL [--output PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Dict, List, Optional

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import WheelSource, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "ascend_compat" / "data" / "npu_op_schemas.json"
CODEGEN_YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"


def op_key(func: str) -> str:
    """``"npu_format_cast.Tensor(Tensor self, ...) -> Tensor"`` -> ``"npu_format_cast.Tensor"``."""
    name = func.split("(", 1)[0].strip()
    return name[: -len(".default")] if name.endswith(".default") else name


def schemas(doc: dict) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    for section in ("custom", "custom_autograd"):
        for entry in doc.get(section) or []:
            if not isinstance(entry, dict) or "func" not in entry:
                continue
            key = op_key(entry["func"])
            dispatch = entry.get("dispatch") or {}
            row = out.setdefault(key, {"schema": " ".join(entry["func"].split()), "exposed": False,
                                       "autograd": False, "composite": None})
            row["exposed"] = row["exposed"] or bool(entry.get("exposed"))
            row["autograd"] = row["autograd"] or section == "custom_autograd"
            composite = sorted(k for k in dispatch if k.startswith("Composite"))
            row["composite"] = row["composite"] or (composite[0] if composite else None)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheel", type=Path, help="a torch_npu-*.whl (or an unpacked torch_npu-<version> directory)")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    src = WheelSource(args.wheel)
    text = src.read_text(CODEGEN_YAML)
    if text is None:
        print(f"error: {src.wheel_filename} has no {CODEGEN_YAML}", file=sys.stderr)
        return 2
    ops = schemas(yaml.safe_load(text))
    digest = hashlib.sha256(args.wheel.read_bytes()).hexdigest() if args.wheel.is_file() else None
    data = {
        "_source": {"description": f"custom npu:: op schemas from {CODEGEN_YAML}",
                    "wheel": src.wheel_filename, "version": src.version, "sha256": digest},
        "_generated_by": "tools/gen_npu_op_schemas.py",
        "version": src.version,
        "ops": ops,
    }
    print(f"read {src.wheel_filename}: {len(ops)} npu op overloads, "
          f"{len({k.split('.')[0] for k in ops})} op names, {sum(r['exposed'] for r in ops.values())} exposed")
    write_json(args.output, data, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
