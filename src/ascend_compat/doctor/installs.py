"""Read what is installed, from files and command output only (nothing is imported).

* Python distributions (torch, torch_npu): version, CUDA build, the torch pin, entry points.
* CANN toolkits in both layouts: ``ascend-toolkit/{latest,<ver>}/`` (CANN <= 8.3) and
  ``cann/`` / ``cann-<ver>/`` (CANN >= 8.5), from ``<arch>-linux/ascend_*_install.info`` and
  ``version.cfg``; also ``$ASCEND_HOME_PATH`` / ``$ASCEND_TOOLKIT_HOME`` and ``~/Ascend`` installs.
* Driver and firmware ``version.info``; ``/etc/ascend_install.info``; device nodes.
* ``npu-smi info`` output (parsed into devices and processes).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ascend_compat.doctor.environment import Environment
from ascend_compat import _versions
from ascend_compat._versions import cann_key


# ---------------------------------------------------------------- Python distributions
@dataclass
class DistInfo:
    name: str
    version: str
    location: Path | None
    requires: list[str] = field(default_factory=list)
    entry_points: list[tuple[str, str, str]] = field(default_factory=list)  # (group, name, value)
    cuda: str | None = None  # torch only: CUDA version of the build, None for CPU builds
    files_ok: bool = True


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_distribution(environment: Environment, name: str) -> DistInfo | None:
    """The installed distribution ``name`` (first on the search path), read from its metadata."""
    from importlib import metadata

    kwargs = {} if environment.sys_path is None else {"path": [str(p) for p in environment.sys_path]}
    want = _norm(name)
    for dist in metadata.distributions(**kwargs):
        try:
            dname = dist.metadata["Name"] or ""
        except Exception:  # a broken dist-info directory
            continue
        if _norm(dname) != want:
            continue
        location = None
        try:
            location = Path(str(dist.locate_file("")))
        except Exception:
            pass
        eps = [(ep.group, ep.name, ep.value) for ep in dist.entry_points]
        info = DistInfo(dname, dist.version or "", location, list(dist.requires or []), eps)
        if want == "torch":
            info.cuda = _torch_cuda(info)
        return info
    return None


def _torch_cuda(info: DistInfo) -> str | None:
    """CUDA version torch was built with, from ``torch/version.py`` (fallback: the ``+cuXXX`` tag)."""
    if info.location is not None:
        vfile = info.location / "torch" / "version.py"
        try:
            text = vfile.read_text("utf-8", errors="replace")
        except OSError:
            text = ""
        m = re.search(r"^cuda\s*(?::[^=]*)?=\s*(['\"])([^'\"]+)\1", text, re.M)
        if m:
            return m.group(2)
        if re.search(r"^cuda\s*(?::[^=]*)?=\s*None", text, re.M):
            return None
    m = re.search(r"\+cu(\d+)", info.version)
    if m:
        digits = m.group(1)
        return f"{digits[:-1]}.{digits[-1]}"
    if any(r.lower().startswith("nvidia-") for r in info.requires if "extra ==" not in r):
        return "unknown"
    return None


def torch_pin(torch_npu: DistInfo) -> str | None:
    """The ``torch==X.Y.Z.*`` requirement torch_npu was built against, as ``X.Y.Z`` (None if absent)."""
    for req in torch_npu.requires:
        pin = _versions.pinned(req, "torch")
        if pin:
            return pin
    return None


# ---------------------------------------------------------------- key=value files
def read_kv(path: Path) -> dict[str, str] | None:
    """``key=value`` lines of ``path`` (keys lower-cased, quotes stripped); None if unreadable."""
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip().lower()] = v.strip().strip("'\"")
    return out


def read_version_cfg(path: Path) -> dict[str, str]:
    """``version.cfg`` component -> external version: ``runtime_running_version=[7.6.0.1.220:8.0.0]``."""
    kv = read_kv(path) or {}
    out = {}
    for k, v in kv.items():
        m = re.match(r"^(\w+?)_running_version$", k)
        if not m:
            continue
        entries = re.findall(r"\[([^\]]*)\]", v) or [v]
        last = entries[-1]
        out[m.group(1)] = last.split(":")[-1].strip()
    return out


# ---------------------------------------------------------------- CANN
@dataclass
class CannInstall:
    home: Path  # the toolkit root as seen on the inspected machine (not prefixed by Environment.root)
    layout: str  # "ascend-toolkit" (CANN <= 8.3) or "cann" (CANN >= 8.5)
    version: str | None
    info_file: Path | None
    arch: str | None
    components: dict[str, str] = field(default_factory=dict)
    ops_version: str | None = None
    set_env: Path | None = None
    source: str = ""  # how it was found: "ASCEND_HOME_PATH", "default location", ...


def _rel(environment: Environment, real: Path) -> Path:
    """Map a path inside ``root`` back to the inspected machine's absolute path."""
    if environment.root == Path("/"):
        return real
    try:
        return Path("/") / real.relative_to(environment.root)
    except ValueError:
        return real


def read_cann(environment: Environment, home: str | Path, source: str) -> CannInstall | None:
    """Describe the toolkit rooted at ``home`` (a machine path), or None if nothing CANN-like is there."""
    real = environment.path(home)
    if not real.is_dir():
        return None
    resolved = real.resolve()
    infos = sorted(resolved.glob("*-linux/ascend_toolkit_install.info")) or \
        sorted(resolved.glob("*-linux/ascend_*_install.info")) or sorted(resolved.glob("ascend_*_install.info"))
    info_file = infos[0] if infos else None
    kv = read_kv(info_file) if info_file else None
    version = kv.get("version") if kv else None
    arch = kv.get("arch") if kv else None
    if arch is None and info_file is not None and info_file.parent.name.endswith("-linux"):
        arch = info_file.parent.name[: -len("-linux")]
    components = read_version_cfg(resolved / "version.cfg")
    if version is None:
        version = components.get("toolkit") or components.get("runtime")
    if info_file is None and not components and not (resolved / "runtime").exists():
        return None
    ops = None
    for ops_file in sorted(resolved.glob("*-linux/ascend_ops_install.info")):
        ops = (read_kv(ops_file) or {}).get("version")
    if ops is None:
        ops = components.get("opp_kernel")
    parts = Path(str(home)).parts
    layout = "ascend-toolkit" if "ascend-toolkit" in parts else "cann" if any(
        p == "cann" or p.startswith("cann-") for p in parts) else "ascend-toolkit" if version and cann_key(
        version) < cann_key("8.5.0") else "cann"
    set_env = None
    for cand in (real.parent / "set_env.sh", real / "set_env.sh"):
        if cand.is_file():
            set_env = _rel(environment, cand)
            break
    return CannInstall(Path(str(home)), layout, version, _rel(environment, info_file) if info_file else None,
                       arch, components, ops, set_env, source)


def candidate_cann_homes(environment: Environment) -> list[tuple[str, str]]:
    """(machine path, source) of every place a CANN toolkit may live, most specific first."""
    out: list[tuple[str, str]] = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        value = environment.get(var)
        if value:
            out.append((value, f"${var}"))
    bases = ["/usr/local/Ascend"]
    home = environment.get("HOME")
    if home:
        bases.append(str(Path(home) / "Ascend"))
    for base in bases:
        out.append((f"{base}/cann", "default location"))
        real = environment.path(base)
        if real.is_dir():
            for d in sorted(real.glob("cann-*"), key=lambda p: cann_key(p.name[5:]), reverse=True):
                out.append((f"{base}/{d.name}", "default location"))
        out.append((f"{base}/ascend-toolkit/latest", "default location"))
        tk = environment.path(f"{base}/ascend-toolkit")
        if tk.is_dir():
            for d in sorted((p for p in tk.iterdir() if p.is_dir() and p.name != "latest"),
                            key=lambda p: cann_key(p.name), reverse=True):
                out.append((f"{base}/ascend-toolkit/{d.name}", "default location"))
    return out


def find_cann(environment: Environment) -> list[CannInstall]:
    """Every distinct toolkit found (same resolved directory reported once, first source wins)."""
    seen: set[Path] = set()
    found = []
    for home, source in candidate_cann_homes(environment):
        inst = read_cann(environment, home, source)
        if inst is None:
            continue
        key = environment.path(home).resolve()
        if key in seen:
            continue
        seen.add(key)
        found.append(inst)
    return found


def broken_latest_link(environment: Environment) -> str | None:
    """The target of a dangling ``ascend-toolkit/latest`` symlink, if there is one."""
    for base in ("/usr/local/Ascend",):
        link = environment.path(f"{base}/ascend-toolkit/latest")
        if link.is_symlink() and not link.exists():
            import os

            return os.readlink(link)
    return None


# ---------------------------------------------------------------- driver, firmware, devices
@dataclass
class DriverInfo:
    path: Path
    version: str | None
    compatible_fw: tuple[str, str] | None = None


def _driver_base(environment: Environment) -> str:
    kv = read_kv(environment.path("/etc/ascend_install.info")) or {}
    base = kv.get("driver_install_path_param") or "/usr/local/Ascend"
    return base.rstrip("/")


def read_driver(environment: Environment) -> DriverInfo | None:
    path = f"{_driver_base(environment)}/driver/version.info"
    kv = read_kv(environment.path(path))
    if kv is None:
        return None
    version = kv.get("version") or kv.get("package_version")
    fw = None
    m = re.match(r"^\[\s*([^,\]]+)\s*,\s*([^\]]+?)\s*\]$", kv.get("compatible_version_fw", ""))
    if m:
        fw = (m.group(1), m.group(2))
    return DriverInfo(Path(path), version, fw)


def read_firmware(environment: Environment) -> tuple[Path, str | None] | None:
    path = f"{_driver_base(environment)}/firmware/version.info"
    kv = read_kv(environment.path(path))
    if kv is None:
        return None
    return Path(path), kv.get("version") or kv.get("package_version")


def device_nodes(environment: Environment) -> tuple[list[int], list[str]]:
    """(sorted davinci<N> indices, control nodes present among davinci_manager/devmm_svm/hisi_hdc)."""
    dev = environment.path("/dev")
    nums = []
    if dev.is_dir():
        for p in dev.glob("davinci*"):
            m = re.fullmatch(r"davinci(\d+)", p.name)
            if m:
                nums.append(int(m.group(1)))
    control = [n for n in ("davinci_manager", "devmm_svm", "hisi_hdc") if (dev / n).exists()]
    return sorted(nums), control


# ---------------------------------------------------------------- npu-smi
@dataclass
class NpuDevice:
    npu: int
    name: str
    health: str
    chip: int | None = None
    bus_id: str | None = None
    memory_used_mb: int | None = None
    memory_total_mb: int | None = None


@dataclass
class NpuSmiInfo:
    version: str | None
    devices: list[NpuDevice]
    processes: list[tuple[int, int, str, int | None]]  # (npu, pid, name, memory MB)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_npu_smi(text: str) -> NpuSmiInfo:
    """Parse ``npu-smi info`` table output (910/910B/A3 with HBM column, 310P with Device column)."""
    m = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", text)
    version = m.group(1) if m else None
    devices: list[NpuDevice] = []
    processes = []
    in_procs = False
    pending: NpuDevice | None = None
    for line in text.splitlines():
        s = line.strip()
        if not s.startswith("|"):
            continue
        cells = _cells(s)
        if any("Process id" in c for c in cells):
            in_procs = True
            continue
        if in_procs:
            if len(cells) >= 3:
                a = cells[0].split()
                if len(a) >= 1 and a[0].isdigit() and cells[1].isdigit():
                    mem = int(cells[-1]) if cells[-1].isdigit() else None
                    processes.append((int(a[0]), int(cells[1]), cells[2], mem))
            continue
        if len(cells) < 3:
            continue
        first = cells[0].split()
        if pending is None and len(first) >= 2 and first[0].isdigit() and not first[1].isdigit():
            pending = NpuDevice(int(first[0]), " ".join(first[1:]), cells[1].split()[0] if cells[1] else "")
            continue
        if pending is not None and first and first[0].isdigit():
            pending.chip = int(first[0])
            pending.bus_id = cells[1] or None
            pairs = re.findall(r"(\d+)\s*/\s*(\d+)", cells[2])
            if pairs:
                used, total = pairs[-1]
                pending.memory_used_mb, pending.memory_total_mb = int(used), int(total)
            devices.append(pending)
            pending = None
    if pending is not None:
        devices.append(pending)
    return NpuSmiInfo(version, devices, processes)

