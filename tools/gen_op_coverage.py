#!/usr/bin/env python3
"""Generate ``src/ascend_compat/data/npu_native_ops.json``: the aten overloads each torch_npu
version implements natively (registers a PrivateUse1 / AutogradPrivateUse1 kernel for), and its
custom ``npu`` ops.

Sources, per torch_npu minor version:
  * a torch_npu wheel (``--wheel-dir``): ``torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml``
    (op-plugin's table filtered to that torch version and merged with the framework ops) plus
    ``npu_native_functions.yaml`` (framework ops: empty*, copy_, view, ...). Preferred: it is what shipped.
  * for versions without a wheel, ``--reconstruct KEY OP_PLUGIN_YAML FRAMEWORK_YAML LABEL``: op-plugin's
    ``op_plugin_functions.yaml`` filtered to ``vKEY`` exactly as op-plugin's
    ``torchnpugen/gen_op_plugin_functions.py`` filters it, merged with the framework yaml as
    torch_npu's build merges them.
  * ``--op-plugin`` (op-plugin master's yaml) is used to cross-check every wheel: the differences are
    printed and their counts recorded under ``_crosscheck``.

Which entries count (torch_npu's ``torchnpugen/gen_backend_stubs.py``): every name in ``supported`` that
is a plain string, or a dict with one of ``impl_ns``/``op_api``/``device_check`` (a dict with only
``sparse`` registers a sparse kernel, not a dense one), and every name in ``autograd`` (registered at
AutogradPrivateUse1). Each overload is registered on its own: ``add.Tensor`` does not imply
``add.out`` or ``add_.Tensor``. Names that are custom npu ops (``copy_memory_``) are not aten ops and
are kept only in ``custom``.

Usage:
  python tools/gen_op_coverage.py --wheel-dir DIR [--op-plugin YAML_OR_DIR] \
      [--reconstruct 2.2 OP_PLUGIN_YAML FRAMEWORK_YAML "label"] [--output PATH]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _sources import find_wheels, minor_key, sorted_unique, version_tuple, write_json  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "ascend_compat" / "data" / "npu_native_ops.json"
CODEGEN_YAML = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
FRAMEWORK_YAML = "torch_npu/csrc/aten/npu_native_functions.yaml"
OP_PLUGIN_YAML = "op_plugin/config/op_plugin_functions.yaml"
FIRST_VERSION = (2, 1)


def overload_name(entry) -> str:
    """``"add.Tensor(Tensor self, ...) -> Tensor"`` / ``"relu.default"`` -> ``"add.Tensor"`` / ``"relu"``."""
    name = (entry["func"] if isinstance(entry, dict) else entry).split("(")[0].strip()
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return name


def registers_dense_kernel(entry) -> bool:
    # gen_backend_stubs.parse_backend_yaml: dict entries need one of these keys to be registered
    return not isinstance(entry, dict) or bool({"impl_ns", "op_api", "device_check"} & set(entry))


def tables_from_backend_yaml(doc: dict) -> Dict[str, List[str]]:
    """The op tables of a merged backend yaml (the shape of ``npu_native_functions_by_codegen.yaml``)."""
    custom_entries = (doc.get("custom") or []) + (doc.get("custom_autograd") or [])
    custom = {overload_name(e) for e in custom_entries}
    exposed = {overload_name(e).split(".")[0] for e in custom_entries if isinstance(e, dict) and e.get("exposed")}
    supported = {overload_name(e) for e in (doc.get("supported") or []) if registers_dense_kernel(e)}
    autograd = {overload_name(e) for e in (doc.get("autograd") or [])}
    sparse = {overload_name(e) for e in (doc.get("supported") or []) if isinstance(e, dict) and e.get("sparse")}
    quant = {overload_name(e) for e in (doc.get("quant") or [])}
    aten = (supported | autograd) - custom
    return {
        "supported": sorted(aten),
        "autograd": sorted(autograd - custom),
        "sparse": sorted(sparse - custom),
        "quant": sorted(quant - custom),
        "custom": sorted(custom),
        "exposed": sorted(exposed),
    }


def merge_backend_yaml(base: dict, extra: dict) -> dict:
    """torch_npu's ``torchnpugen/utils.merge_yaml``: op-plugin's ``official`` becomes ``supported``,
    list items are appended when not already present, the base (framework yaml) wins conflicts."""
    def merge(b, a):
        if isinstance(b, dict):
            for k, v in a.items():
                k2 = "supported" if k == "official" else k
                b[k2] = v if k2 not in b else merge(b[k2], v)
        elif isinstance(b, list):
            for item in a:
                if item not in b:
                    b.append(item)
        return b
    return merge({k: (list(v) if isinstance(v, list) else v) for k, v in base.items()}, extra)


def op_plugin_versions(spec, all_version: List[str]) -> List[str]:
    """op-plugin's ``get_version``: ``all_version`` / ``[v2.1, newest]`` / ``[v2.1, v2.4]`` / ``"v2.1, v2.2"``."""
    if spec is None:
        return []
    if isinstance(spec, list):
        start = all_version.index(spec[0])
        if spec[1] == "newest":
            return all_version[start:]
        return all_version[start: all_version.index(spec[1]) + 1]
    if spec == "all_version":
        return list(all_version)
    return [s.strip() for s in str(spec).split(",") if s.strip()]


def filter_op_plugin(doc: dict, key: str) -> dict:
    """op-plugin's table for torch ``key`` (``"2.2"``) in the shape torch_npu's build merges."""
    version = f"v{key}"
    all_version = doc["all_version"]
    if version not in all_version:
        raise ValueError(f"op-plugin yaml has no {version}; it covers {all_version}")
    out: Dict[str, list] = {}
    for section in ("official", "custom", "symint", "quant", "autograd"):
        kept = []
        for item in doc.get(section) or []:
            acl = op_plugin_versions(item.get("acl_op"), all_version)
            api = op_plugin_versions(item.get("op_api"), all_version)
            sparse = op_plugin_versions(item.get("sparse"), all_version)
            if version not in acl + api + sparse:
                continue
            new = {"func": item["func"]}
            if acl or api:
                new["impl_ns"] = ", ".join(ns for ns, vs in (("acl_op", acl), ("op_api", api)) if version in vs)
            if version in sparse:
                new["sparse"] = "op_api"
            if version in op_plugin_versions(item.get("exposed"), all_version):
                new["exposed"] = True
            kept.append(new)
        out[section] = kept
    return out


def load_yaml_text(text: str, what: str) -> dict:
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict):
        raise SystemExit(f"error: {what} is not a yaml mapping")
    return doc


def resolve_op_plugin_path(p: Path) -> Path:
    return p / OP_PLUGIN_YAML if p.is_dir() else p


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel-dir", type=Path, required=True, help="torch_npu-*.whl files or unpacked torch_npu-<ver>/ dirs")
    ap.add_argument("--op-plugin", type=Path, help="op-plugin checkout dir or its op_plugin_functions.yaml (cross-check)")
    ap.add_argument("--op-plugin-label", default="Ascend/op-plugin master", help="provenance text for --op-plugin")
    ap.add_argument("--reconstruct", nargs=4, action="append", default=[],
                    metavar=("KEY", "OP_PLUGIN_YAML", "FRAMEWORK_YAML", "LABEL"),
                    help="build version KEY (e.g. 2.2) without a wheel from these two yaml files")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)

    versions: Dict[str, dict] = {}
    sources: Dict[str, str] = {}
    wheels = find_wheels(args.wheel_dir)
    for key in sorted(wheels, key=version_tuple):
        if version_tuple(key) < version_tuple("%d.%d" % FIRST_VERSION):
            print(f"  {key}: older than 2.1, skipped")
            continue
        src = wheels[key]
        text = src.read_text(CODEGEN_YAML)
        if text is None:
            print(f"  {key}: {src.wheel_filename} has no {CODEGEN_YAML}; skipped")
            continue
        doc = load_yaml_text(text, f"{src.wheel_filename}:{CODEGEN_YAML}")
        fw_text = src.read_text(FRAMEWORK_YAML)
        if fw_text is not None:  # normally already merged into the codegen yaml; merging again is a no-op
            doc = merge_backend_yaml(load_yaml_text(fw_text, FRAMEWORK_YAML), doc)
        versions[key] = tables_from_backend_yaml(doc)
        sources[key] = f"torch_npu {src.version} wheel ({src.wheel_filename})"
        print(f"read {src.wheel_filename}: {len(versions[key]['supported'])} aten overloads, "
              f"{len(versions[key]['custom'])} custom ops")

    for key, op_yaml, fw_yaml, label in args.reconstruct:
        key = minor_key(key)
        if key in versions:
            print(f"  {key}: a wheel exists, --reconstruct ignored")
            continue
        doc = merge_backend_yaml(load_yaml_text(Path(fw_yaml).read_text(encoding="utf-8"), fw_yaml),
                                 filter_op_plugin(load_yaml_text(resolve_op_plugin_path(Path(op_yaml)).read_text(encoding="utf-8"), op_yaml), key))
        versions[key] = tables_from_backend_yaml(doc)
        sources[key] = label
        print(f"reconstructed {key} from {label}: {len(versions[key]['supported'])} aten overloads, "
              f"{len(versions[key]['custom'])} custom ops")

    if not versions:
        print("error: no torch_npu version found; pass --wheel-dir with torch_npu wheels", file=sys.stderr)
        return 2

    crosscheck: Dict[str, dict] = {}
    if args.op_plugin:
        op_path = resolve_op_plugin_path(args.op_plugin)
        master = load_yaml_text(op_path.read_text(encoding="utf-8"), str(op_path))
        print(f"cross-check against {args.op_plugin_label} ({op_path.name}, all_version {master['all_version'][0]}..{master['all_version'][-1]})")
        for key, src in sorted(wheels.items(), key=lambda kv: version_tuple(kv[0])):
            if key not in versions or f"v{key}" not in master["all_version"]:
                continue
            fw = load_yaml_text(src.read_text(FRAMEWORK_YAML) or "{}", FRAMEWORK_YAML) if src.read_text(FRAMEWORK_YAML) else {}
            view = tables_from_backend_yaml(merge_backend_yaml(fw, filter_op_plugin(master, key)))
            entry = {}
            for table in ("supported", "custom"):
                wheel_set: Set[str] = set(versions[key][table])
                plugin_set: Set[str] = set(view[table])
                only_w, only_p = sorted(wheel_set - plugin_set), sorted(plugin_set - wheel_set)
                entry[table] = {"only_in_wheel": len(only_w), "only_in_op_plugin": len(only_p)}
                print(f"  {key} {table}: wheel {len(wheel_set)}, op-plugin {len(plugin_set)}; "
                      f"only in wheel {len(only_w)} {only_w[:8]}; only in op-plugin {len(only_p)} {only_p[:8]}")
            crosscheck[key] = entry

    data = {
        "_source": {
            "description": "aten overloads with a torch_npu PrivateUse1/AutogradPrivateUse1 kernel, and custom npu ops, per torch_npu minor version",
            "versions": sources,
            "crosscheck_against": args.op_plugin_label if args.op_plugin else None,
        },
        "_generated_by": "tools/gen_op_coverage.py",
        "_crosscheck": crosscheck,
        "versions": versions,
    }
    write_json(args.output, data, indent=0)
    for key in sorted(versions, key=version_tuple):
        v = versions[key]
        print(f"  {key:>5}: supported {len(v['supported'])}, custom {len(v['custom'])}, exposed {len(v['exposed'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
