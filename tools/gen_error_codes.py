#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/error_codes.json`` from the headers bundled in a torch-npu wheel.

Usage::

    pip download --no-deps torch-npu==2.14.0 -d wheels/
    python tools/gen_error_codes.py wheels/torch_npu-2.14.0-*.whl

What is read (inside the wheel, never unpacked to disk):

* ``torch_npu/include/acl/acl_base_rt.h``: ``static const int ACL_ERROR_* = N;`` (1000xx-5000xx, 1480xx)
* ``torch_npu/include/acl/error_codes/rt_error_codes.h``: ``#define ACL_ERROR_RT_* N`` (107xxx, 207xxx, 507xxx)
* ``torch_npu/include/acl/error_codes/ge_error_codes.h``: ``ACL_ERROR_GE_*`` (145xxx, 245xxx, 345xxx, 545xxx)
* ``torch_npu/include/third_party/hccl/inc/hccl/hccl_types.h``: the ``HcclResult`` enum (0-24)

Each entry keeps the code, its symbol, the family (derived from the number, see ``FAMILIES``), the
header it came from and the header's own one-line label when it has one. The aclnn status codes
(161xxx/361xxx/561xxx) are not in any header shipped with torch_npu; they are added from the
constant table below, transcribed from CANN's published "aclnn return codes" list (symbols and
numbers only). Output is written atomically; the JSON header names the wheel and this script.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import write_text  # noqa: E402

HEADERS = {
    "acl/acl_base_rt.h": "torch_npu/include/acl/acl_base_rt.h",
    "acl/error_codes/rt_error_codes.h": "torch_npu/include/acl/error_codes/rt_error_codes.h",
    "acl/error_codes/ge_error_codes.h": "torch_npu/include/acl/error_codes/ge_error_codes.h",
    "hccl/hccl_types.h": "torch_npu/include/third_party/hccl/inc/hccl/hccl_types.h",
}

#: aclnn status codes (CANN documentation "aclnn return codes"; not shipped in torch_npu headers).
ACLNN_CODES = {
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
    561001: "ACLNN_ERR_INNER_INFERSHAPE_ERROR",
    561002: "ACLNN_ERR_INNER_TILING_ERROR",
    561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
    561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
    561102: "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR",
    561103: "ACLNN_ERR_INNER_NULLPTR",
    561104: "ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE",
    561105: "ACLNN_ERR_INNER_KEY_CONFLICT",
    561106: "ACLNN_ERR_INNER_INVALID_IMPL_MODE",
    561107: "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND",
    561108: "ACLNN_ERR_INNER_LOAD_JSON_FAILED",
    561109: "ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND",
    561110: "ACLNN_ERR_INNER_JSON_FORMAT_INVALID",
    561111: "ACLNN_ERR_INNER_JSON_DTYPE_INVALID",
    561112: "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND",
    561113: "ACLNN_ERR_INNER_OP_FILE_INVALID",
    561114: "ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND",
    561115: "ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH",
    561116: "ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE",
    561117: "ACLNN_ERR_INNER_INPUT_JSON_IS_NULL",
    561118: "ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID",
    561119: "ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID",
}

_DEFINE = re.compile(r"^\s*#define\s+(ACL_[A-Z0-9_]+)\s+(\d+)\s*(?://\s*(.*))?$")
_CONST = re.compile(r"^\s*static\s+const\s+\w+\s+(ACL_[A-Z0-9_]+)\s*=\s*(\d+)U?\s*;\s*(?://\s*(.*))?$")
_ENUM = re.compile(r"^\s*(HCCL_[A-Z0-9_]+)\s*=\s*(\d+)\s*,?\s*(?:/\*\*<\s*(.*?)\s*\*/)?")


def family(code: int) -> str:
    """The family key of a numeric code, by its range (mirrors ascend_compat.errors.codes.family_of)."""
    if 0 < code < 100:
        return "hccl"
    prefix = code // 1000
    return {
        100: "acl_param", 148: "acl_param", 145: "ge_param", 200: "acl_resource", 245: "ge_resource",
        300: "acl_storage", 345: "ge_storage", 500: "acl_internal", 545: "ge_internal",
        107: "rt_param", 207: "rt_resource", 507: "rt_internal",
        161: "aclnn_param", 361: "aclnn_runtime", 561: "aclnn_internal",
    }.get(prefix, "unknown")


def parse_header(text: str, header: str) -> list[dict]:
    """All (code, symbol, label) triples defined in one header's text."""
    out = []
    in_hccl_enum = False
    for line in text.splitlines():
        m = _DEFINE.match(line) or _CONST.match(line)
        if m is None and header.startswith("hccl/"):
            if "typedef enum" in line:
                in_hccl_enum = True
            elif in_hccl_enum and "HcclResult" in line:
                in_hccl_enum = False
            m = _ENUM.match(line) if in_hccl_enum else None
        if m is None:
            continue
        symbol, code, label = m.group(1), int(m.group(2)), (m.group(3) or "").strip()
        if code == 0 or symbol.startswith("HCCL_") and not symbol.startswith("HCCL_E_"):
            continue  # success values and non-result enums
        out.append({"code": code, "symbol": symbol, "family": family(code), "header": header,
                    "label": label})
    return out


def extract(wheel: Path) -> tuple[str, list[dict]]:
    """(torch_npu version, sorted entries) read from ``wheel``; raises SystemExit on a bad wheel."""
    m = re.match(r"torch_npu-([^-]+)-", wheel.name)
    if not m:
        raise SystemExit(f"error: {wheel.name} does not look like a torch_npu wheel (torch_npu-<ver>-...whl)")
    entries: dict[tuple[int, str], dict] = {}
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for header, member in HEADERS.items():
            if member not in names:
                raise SystemExit(f"error: {member} is missing from {wheel.name}; the layout changed, "
                                 "update HEADERS in this script")
            for e in parse_header(zf.read(member).decode("utf-8", "replace"), header):
                entries.setdefault((e["code"], e["symbol"]), e)
    for code, symbol in ACLNN_CODES.items():
        entries.setdefault((code, symbol), {"code": code, "symbol": symbol, "family": family(code),
                                            "header": "aclnn return codes (CANN documentation)",
                                            "label": ""})
    return m.group(1), sorted(entries.values(), key=lambda e: (e["code"], e["symbol"]))



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="a torch_npu-*.whl file")
    parser.add_argument("-o", "--output", type=Path,
                        default=Path(__file__).resolve().parent.parent / "src/ascend_compat/data/error_codes.json")
    args = parser.parse_args(argv)
    if not args.wheel.is_file():
        parser.error(f"{args.wheel} is not a file")
    version, entries = extract(args.wheel)
    doc = {
        "_source": f"headers bundled in {args.wheel.name} (torch_npu {version}): "
                   + ", ".join(HEADERS) + "; aclnn status codes from CANN's aclnn return-code list",
        "_generated_by": "tools/gen_error_codes.py",
        "torch_npu_version": version,
        "codes": entries,
    }
    write_text(args.output, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(entries)} codes to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
