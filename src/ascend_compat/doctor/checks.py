"""The checks of ``ascend-compat doctor``: small functions from :class:`Facts` to :class:`Check` objects.

``run_doctor(environment)`` runs every function in ``CHECKS`` in order and returns the checks.
:class:`Facts` reads each fact once (distributions, CANN installs, driver, device nodes, npu-smi
output) from the injectable :class:`Environment`; the check functions only judge them. Each check
says what it found and, when something is wrong or missing, the concrete command or setting that
fixes it. Nothing here imports torch or torch_npu in-process.
"""
from __future__ import annotations

import sys
from functools import cached_property
from typing import Callable, Iterable, Union

from ascend_compat.doctor import installs
from ascend_compat.doctor.environment import Check, Environment, ProbeResult, Status
from ascend_compat._versions import cann_key, key as version_key
from ascend_compat.knowledge import env_vars, hccl_env, visible_devices
from ascend_compat.doctor.versions import base_version, matrix_rows, python_range, release_line

OK, WARN, FAIL, INFO = Status.OK, Status.WARN, Status.FAIL, Status.INFO

CPU_TORCH = "`pip install torch=={v} --index-url https://download.pytorch.org/whl/cpu`"
CANN_DOWNLOAD = "https://www.hiascend.com/developer/download/community/result?module=cann"
SET_ENV_HINT = "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` (CANN <= 8.3) or " \
               "`source /usr/local/Ascend/cann/set_env.sh` (CANN >= 8.5)"


class Facts:
    """Everything the checks judge, read lazily and once from an :class:`Environment`."""

    def __init__(self, environment: Environment):
        self.environment = environment

    @cached_property
    def simulated(self) -> bool:
        if self.environment.simulate:
            return True
        if (self.environment.get("ASCEND_COMPAT_SIMULATE") or "").lower() in ("1", "true", "yes", "on"):
            return True
        return self.in_process_simulator  # never imports the simulator itself

    @cached_property
    def in_process_simulator(self) -> bool:
        """The simulator is installed in this very process (then torch is already imported)."""
        if not self.environment.inspect_process:
            return False
        sim = sys.modules.get("ascend_compat.simulator")
        try:
            return bool(sim is not None and sim.is_installed())
        except Exception:
            return False

    @cached_property
    def sim_soc(self) -> str:
        if self.in_process_simulator:
            try:
                return str(sys.modules["torch"].npu.get_device_name(0))
            except Exception:
                pass
        return self.environment.get("ASCEND_COMPAT_SIM_SOC") or "Ascend910B3"

    @cached_property
    def sim_devices(self) -> int:
        if self.in_process_simulator:
            try:
                return int(sys.modules["torch"].npu.device_count())
            except Exception:
                pass
        try:
            return max(1, int(self.environment.get("ASCEND_COMPAT_SIM_DEVICES") or 1))
        except ValueError:
            return 1

    @cached_property
    def torch(self) -> installs.DistInfo | None:
        return installs.find_distribution(self.environment, "torch")

    @cached_property
    def _torch_npu_dist(self) -> installs.DistInfo | None:
        return installs.find_distribution(self.environment, "torch_npu")

    @cached_property
    def torch_npu_standin(self) -> installs.DistInfo | None:
        """The simulator's stand-in 'torch_npu' distribution, when that is what is visible."""
        d = self._torch_npu_dist
        return d if d is not None and d.location is not None and "ascend_compat" in d.location.parts else None

    @cached_property
    def torch_npu(self) -> installs.DistInfo | None:
        """The real torch_npu distribution (never the simulator's stand-in)."""
        return None if self.torch_npu_standin is not None else self._torch_npu_dist

    @cached_property
    def torch_npu_import(self) -> ProbeResult | None:
        probe = self.environment.import_probe
        if self.torch_npu is None or probe is None or self.simulated:
            return None
        return probe("torch_npu", self.environment)

    @cached_property
    def cann(self) -> list[installs.CannInstall]:
        return installs.find_cann(self.environment)

    @cached_property
    def driver(self) -> installs.DriverInfo | None:
        return installs.read_driver(self.environment)

    @cached_property
    def firmware(self):
        return installs.read_firmware(self.environment)

    @cached_property
    def devices(self) -> tuple[list[int], list[str]]:
        return installs.device_nodes(self.environment)

    @cached_property
    def npu_smi(self) -> tuple[installs.NpuSmiInfo | None, str]:
        """(parsed output or None, note): note says why there is no output."""
        result = self.environment.run(["npu-smi", "info"], self.environment.env, 20.0)
        if result is None:
            return None, "npu-smi is not on PATH"
        if result.returncode != 0:
            err = (result.stderr or result.stdout).strip().splitlines()
            return None, f"npu-smi info failed (exit {result.returncode}): {err[-1] if err else 'no output'}"
        return installs.parse_npu_smi(result.stdout), ""

    @cached_property
    def device_count(self) -> int | None:
        """Visible hardware NPUs (device nodes, else npu-smi), None when unknown."""
        nums, _ = self.devices
        if nums:
            return len(nums)
        smi, _ = self.npu_smi
        if smi and smi.devices:
            return len(smi.devices)
        return None

    @cached_property
    def matrix(self) -> tuple[list[dict], str]:
        return matrix_rows(self.environment.version_matrix)

    def primary_cann(self) -> installs.CannInstall | None:
        return self.cann[0] if self.cann else None


CheckResult = Union[Check, Iterable[Check], None]


# ---------------------------------------------------------------- Python, torch, torch_npu
def check_python(f: Facts) -> CheckResult:
    py = f.environment.python_version
    text = ".".join(map(str, py))
    if f.torch is None:
        return Check("python", OK, f"Python {text}")
    rng = python_range(f.torch.version)
    if rng is None:
        return Check("python", INFO, f"Python {text}; no supported-Python data for torch {f.torch.version}")
    lo, hi = rng
    if not (lo <= tuple(py[:2]) <= hi):
        return Check("python", WARN,
                     f"Python {text} is outside the range torch {base_version(f.torch.version)} supports "
                     f"({lo[0]}.{lo[1]}-{hi[0]}.{hi[1]}); torch_npu wheels follow the same range",
                     f"use Python {lo[0]}.{lo[1]}-{hi[0]}.{hi[1]} (e.g. a new venv) for this torch")
    return Check("python", OK, f"Python {text} (torch {base_version(f.torch.version)} supports "
                               f"{lo[0]}.{lo[1]}-{hi[0]}.{hi[1]})")


def check_torch(f: Facts) -> CheckResult:
    t = f.torch
    if t is None:
        if f.torch_npu is not None:
            want = installs.torch_pin(f.torch_npu) or base_version(f.torch_npu.version)
            return Check("torch", FAIL, f"torch is not installed (torch_npu {f.torch_npu.version} needs torch {want})",
                         CPU_TORCH.format(v=want))
        rows, _ = f.matrix
        example = ""
        if rows:
            best = max(rows, key=lambda r: (version_key(r["torch"]), version_key(r["torch_npu"])))
            example = f" (newest published pair: torch {best['torch']} + torch_npu {best['torch_npu']}, " \
                      f"CANN {best['cann']}): " + CPU_TORCH.format(v=best["torch"])
        return Check("torch", FAIL, "torch is not installed",
                     "install the CPU build of a torch version that has a torch_npu release" + example)
    if t.cuda:
        detail = f"torch {t.version} is a CUDA build (CUDA {t.cuda}); torch_npu refuses to load next to " \
                 "another accelerator (ERR00007 'Two accelerators cannot be used at the same time')"
        fix = "replace it with the CPU build: " + CPU_TORCH.format(v=base_version(t.version))
        if f.torch_npu is not None:
            return Check("torch", FAIL, detail, fix)
        return Check("torch", WARN, detail, fix + " before installing torch_npu")
    return Check("torch", OK, f"torch {t.version} (CPU build, as torch_npu requires)")


def _suggest_torch_npu(f: Facts) -> str:
    tv = base_version(f.torch.version) if f.torch else None
    rows, _ = f.matrix
    cann = f.primary_cann()
    if tv and rows:
        cands = [r for r in rows if base_version(r["torch"]) == tv]
        if cann and cann.version:
            with_cann = [r for r in cands if r["cann"] == cann.version]
            cands = with_cann or cands
        if cands:
            paired = [r for r in cands if r["cann"]]
            best = max(paired or cands, key=lambda r: version_key(r["torch_npu"]))
            if best["cann"]:
                return f"run `pip install torch-npu=={best['torch_npu']}` (published pairing: torch {best['torch']}, " \
                       f"CANN {best['cann']})"
            # on PyPI, but Ascend publishes no CANN for it: say so, as the compatibility line does
            return f"run `pip install torch-npu=={best['torch_npu']}` (on PyPI for torch {tv}; Ascend publishes no " \
                   "CANN pairing for it, so use the newest CANN" + _newest_pairing(rows) + ")"
    if tv and rows:
        mm = release_line(tv)
        same_minor = [r for r in rows if mm and release_line(r["torch"]) == mm]
        if same_minor:
            best = max(same_minor, key=lambda r: (version_key(r["torch"]), version_key(r["torch_npu"])))
            return (f"no torch_npu release is built for torch {tv}; the nearest is torch_npu {best['torch_npu']} "
                    f"for torch {best['torch']}: " + CPU_TORCH.format(v=best["torch"])
                    + f", then `pip install torch-npu=={best['torch_npu']}`")
    if tv:
        return f"run `pip install torch-npu=={tv}` if that release exists (torch_npu versions follow torch's; check the " \
               "CANN pairing in Ascend/pytorch's compatibility table)"
    return "install the torch-npu release matching your torch version"


def check_torch_npu(f: Facts) -> CheckResult:
    n = f.torch_npu
    if f.torch_npu_standin is not None:
        s = f.torch_npu_standin
        return Check("torch_npu", INFO, f"'torch_npu' {s.version} visible here is the ascend-compat simulator's "
                                        f"stand-in ({s.location}), not the real package")
    if n is None:
        if f.simulated:
            return Check("torch_npu", INFO, "torch_npu is not installed; the ascend-compat simulator provides a "
                                            "stand-in 'torch_npu' module while simulating")
        return Check("torch_npu", FAIL, "torch_npu is not installed (it is what makes the 'npu' device exist)",
                     _suggest_torch_npu(f))
    out = [Check("torch_npu", OK, f"torch_npu {n.version} installed" + (f" at {n.location}" if n.location else ""))]
    pin = installs.torch_pin(n)
    if f.torch is not None:
        want = pin or base_version(n.version)
        have = base_version(f.torch.version)
        if base_version(want) != have:
            out.append(Check("torch_npu_abi", FAIL,
                             f"torch_npu {n.version} is built for torch {want}.* but torch {f.torch.version} is "
                             "installed; importing it fails with undefined symbols, or 'Failed to load the backend "
                             "extension' at 'import torch'",
                             f"run `pip install torch-npu=={have}` (or " + CPU_TORCH.format(v=want) + ")"))
    if f.simulated:
        out.append(Check("torch_npu", INFO, "the simulator is active: it blocks the real torch_npu in this process"))
    return out


def _import_fix(message: str) -> str:
    low = message.lower()
    if "two accelerators" in low:
        return "install the CPU build of torch (see the torch check)"
    if "libascendcl" in low or "libhccl" in low or "libruntime" in low or "ascend_opp_path" in low \
            or ".so" in low and "cannot open" in low:
        return "CANN libraries are not on the library path: " + SET_ENV_HINT
    if "undefined symbol" in low:
        return "torch_npu and torch versions do not match: install torch-npu built for your torch"
    return "run `python -c 'import torch_npu'` to see the full error, and pass that output to `ascend-compat error --log -`"


def check_torch_npu_import(f: Facts) -> CheckResult:
    res = f.torch_npu_import
    if res is None:
        return None
    if res.ok:
        return Check("torch_npu_import", OK, f"import torch_npu works in a fresh interpreter (version {res.message})")
    return Check("torch_npu_import", FAIL, f"import torch_npu fails: {res.message}", _import_fix(res.message))


# ---------------------------------------------------------------- CANN, driver, devices
def check_cann(f: Facts) -> CheckResult:
    broken = installs.broken_latest_link(f.environment)
    out = []
    if broken:
        out.append(Check("cann", FAIL, f"/usr/local/Ascend/ascend-toolkit/latest is a dangling symlink (-> {broken})",
                         "reinstall the toolkit or point 'latest' at an installed version directory"))
    if not f.cann:
        looked = ", ".join(h for h, _ in installs.candidate_cann_homes(f.environment)[:4])
        if f.simulated:
            out.append(Check("cann", INFO, "no CANN toolkit (not needed under the simulator; real NPUs need it)"))
        else:
            out.append(Check("cann", FAIL, f"no CANN toolkit found (looked at {looked})",
                             "install the CANN toolkit and the matching ops (kernels) package for your chip from "
                             f"{CANN_DOWNLOAD}, then " + SET_ENV_HINT))
        return out
    for i, c in enumerate(f.cann):
        where = f"{c.home} ({c.layout} layout, found via {c.source})"
        if c.version is None:
            out.append(Check("cann", WARN, f"CANN at {where} has no readable ascend_*_install.info or version.cfg",
                             "the install is incomplete; reinstall the toolkit"))
        elif c.info_file is None:
            out.append(Check("cann", WARN, f"CANN {c.version} at {where}: no <arch>-linux/ascend_toolkit_install.info "
                                           "(version taken from version.cfg)",
                             "the install may be partial; reinstall the toolkit if ops fail to load"))
        else:
            status = OK if i == 0 else INFO
            extra = "" if i == 0 else " (another install; the first one listed is what the environment uses)"
            out.append(Check("cann", status, f"CANN {c.version} at {where}, arch {c.arch or '?'}{extra}"))
    return out


def check_cann_components(f: Facts) -> CheckResult:
    c = f.primary_cann()
    if c is None or c.version is None:
        return None
    out = []
    comps = {k: v for k, v in c.components.items() if k in ("runtime", "compiler", "hccl", "opp", "toolkit")}
    distinct = {cann_key(v) for v in comps.values()}
    if len(distinct) > 1:
        listing = ", ".join(f"{k} {v}" for k, v in sorted(comps.items()))
        out.append(Check("cann_components", WARN, f"CANN components have different versions: {listing}",
                         "a partial upgrade: reinstall all CANN packages of one version"))
    if c.ops_version is None:
        out.append(Check("cann_ops", WARN,
                         f"no ops (kernels) package detected for CANN {c.version} (no ascend_ops_install.info, "
                         "no opp_kernel in version.cfg); ops then fail with EZ9999 'Cannot find bin of op' / 561003",
                         f"install the CANN ops/kernels package {c.version} for your chip from {CANN_DOWNLOAD}"))
    elif cann_key(c.ops_version) != cann_key(c.version):
        out.append(Check("cann_ops", WARN, f"ops package {c.ops_version} does not match toolkit {c.version}",
                         f"install the ops package of version {c.version}"))
    else:
        out.append(Check("cann_ops", OK, f"ops (kernels) package {c.ops_version} matches the toolkit"))
    return out


def check_driver(f: Facts) -> CheckResult:
    d = f.driver
    if d is None:
        if f.simulated:
            return Check("driver", INFO, "no NPU driver (not needed under the simulator)")
        return Check("driver", FAIL, "NPU driver not installed (no /usr/local/Ascend/driver/version.info)",
                     "on an Ascend host install the npu-driver and npu-firmware packages; in a container mount "
                     "the host's /usr/local/Ascend/driver (read-only)")
    return Check("driver", OK, f"driver {d.version or '?'} ({d.path})")


def check_firmware(f: Facts) -> CheckResult:
    fw, d = f.firmware, f.driver
    if fw is None:
        if d is None:
            return None
        return Check("firmware", INFO, "firmware version file not visible (normal inside containers)")
    path, version = fw
    if d is not None and d.compatible_fw and version:
        lo, hi = d.compatible_fw
        if not (cann_key(lo) <= cann_key(version) <= cann_key(hi)):
            return Check("firmware", WARN, f"firmware {version} is outside the range driver {d.version} accepts "
                                           f"({lo} .. {hi})",
                         "install the firmware package released with this driver")
    return Check("firmware", OK, f"firmware {version or '?'} ({path})")


def check_devices(f: Facts) -> CheckResult:
    nums, control = f.devices
    if f.simulated:
        return Check("devices", INFO,
                     f"SIMULATED: {f.sim_devices} 'npu' device(s) computed on the host CPU by ascend-compat "
                     f"({f.sim_soc} emulated); no real NPU is "
                     f"used" + (f"; {len(nums)} real device node(s) also present" if nums else ""))
    if not nums:
        return Check("devices", FAIL, "no NPU device nodes (/dev/davinci<N>): this machine or container has no "
                                      "visible Ascend NPU",
                     "on Ascend hardware: load the driver (npu-smi info must list the cards); in Docker pass "
                     "--device=/dev/davinci0 (one per card) and --device=/dev/davinci_manager --device=/dev/devmm_svm "
                     "--device=/dev/hisi_hdc; without hardware: `ascend-compat run --simulate SCRIPT`")
    listing = f"/dev/davinci{nums[0]}" + (f"..{nums[-1]}" if len(nums) > 1 else "")
    missing = [n for n in ("davinci_manager", "devmm_svm", "hisi_hdc") if n not in control]
    if missing:
        return Check("devices", WARN, f"{len(nums)} device node(s) ({listing}) but missing "
                                      + ", ".join(f"/dev/{m}" for m in missing),
                     "pass these nodes to the container too (--device=/dev/" + " --device=/dev/".join(missing) + ")")
    return Check("devices", OK, f"{len(nums)} NPU device node(s): {listing} (+ {', '.join(control)})")


def check_npu_smi(f: Facts) -> CheckResult:
    smi, note = f.npu_smi
    if smi is None:
        status = WARN if f.driver is not None and not f.simulated else INFO
        fix = "add the driver tools to PATH (npu-smi is in /usr/local/Ascend/driver/tools or /usr/local/sbin)" \
            if status is WARN else ""
        return Check("npu_smi", status, note, fix)
    if not smi.devices:
        return Check("npu_smi", WARN, f"npu-smi {smi.version or ''} ran but listed no NPU",
                     "check the driver (dmesg, npu-smi info -l)")
    names = sorted({d.name for d in smi.devices})
    bad = [d for d in smi.devices if d.health.upper() != "OK"]
    out = []
    mem = [d for d in smi.devices if d.memory_total_mb]
    used = f"; memory in use {sum(d.memory_used_mb or 0 for d in mem)}/{sum(d.memory_total_mb or 0 for d in mem)} MB" \
        if mem else ""
    out.append(Check("npu_smi", WARN if bad else OK,
                     f"npu-smi {smi.version or '?'}: {len(smi.devices)} x {'/'.join(names)}" + used
                     + ("; unhealthy: " + ", ".join(f"NPU {d.npu} {d.health}" for d in bad) if bad else ""),
                     "check the unhealthy cards before using them ("
                     + "; ".join(f"npu-smi info -t health -i {d.npu}" for d in bad) + ")" if bad else ""))
    if smi.processes:
        procs = ", ".join(f"NPU {n}: pid {pid} {name}" for n, pid, name, _ in smi.processes[:6])
        out.append(Check("npu_processes", INFO, f"{len(smi.processes)} process(es) already use NPUs ({procs})",
                         "if these are leftovers, stop them: they hold memory and can cause EJ0001 / 207004"))
    return out


# ---------------------------------------------------------------- compatibility
def _newest_pairing(rows: list[dict]) -> str:
    """``"; the newest published combination is torch T + torch_npu N + CANN C"`` (empty without one)."""
    paired = [r for r in rows if r["cann"]]
    if not paired:
        return ""
    best = max(paired, key=lambda r: (cann_key(r["cann"]), version_key(r["torch_npu"])))
    return f"; the newest published combination is torch {best['torch']} + torch_npu {best['torch_npu']} + " \
           f"CANN {best['cann']}"


def _newest_cann_hint(rows: list[dict]) -> str:
    paired = [r for r in rows if r["cann"]]
    if not paired:
        return ""
    best = max(paired, key=lambda r: (cann_key(r["cann"]), version_key(r["torch_npu"])))
    return f" (newest published pairing: torch_npu {best['torch_npu']} + CANN {best['cann']})"


def check_compatibility(f: Facts) -> CheckResult:
    rows, note = f.matrix
    if not rows:
        return Check("compatibility", INFO, note or "version matrix is empty")
    n, t, c = f.torch_npu, f.torch, f.primary_cann()
    cv = c.version if c else None
    if n is None:
        if t is None:
            return None
        tv = base_version(t.version)
        cands = sorted((r for r in rows if base_version(r["torch"]) == tv), key=lambda r: version_key(r["torch_npu"]))
        if not cands:
            newest = max(rows, key=lambda r: version_key(r["torch"]))
            return Check("compatibility", WARN, f"torch {t.version} has no torch_npu row in the published matrix "
                                                f"(newest row: torch {newest['torch']})",
                         f"use a torch version with a torch_npu release, e.g. torch {newest['torch']} + torch_npu "
                         f"{newest['torch_npu']} + CANN {newest['cann']}")
        pairs = "; ".join(f"torch_npu {r['torch_npu']} + " + (f"CANN {r['cann']}" if r["cann"] else
                                                                 "CANN pairing not published")
                          for r in cands[-4:])
        return Check("compatibility", INFO, f"torch_npu releases for torch {tv}: {pairs}"
                     + ("" if any(r["cann"] for r in cands) else _newest_cann_hint(rows)))
    same = [r for r in rows if r["torch_npu"] == n.version]
    if not same:
        base = [r for r in rows if base_version(r["torch_npu"]) == base_version(n.version)]
        hint = ("; rows for the same release: " + ", ".join(f"{r['torch_npu']} (CANN {r['cann']})" for r in base[:4])) \
            if base else ""
        return Check("compatibility", WARN, f"torch_npu {n.version} is not in the published compatibility matrix"
                                            f"{hint}; its CANN pairing is not documented",
                     "prefer a published combination, or use the newest CANN and verify with a small run")
    canns = sorted({r["cann"] for r in same if r["cann"]}, key=cann_key)
    if not canns:
        return Check("compatibility", WARN if cv else INFO,
                     f"torch_npu {n.version} is on PyPI but its CANN pairing is not published"
                     + _newest_cann_hint(rows) + (f"; installed CANN {cv}" if cv else ""),
                     "if ops fail to load, try the newest CANN release" if cv else "")
    if not cv:
        return Check("compatibility", INFO, f"torch_npu {n.version} pairs with CANN {', '.join(canns)}")
    if cv in canns:
        return Check("compatibility", OK, f"torch {t.version if t else '?'} + torch_npu {n.version} + CANN {cv} "
                                          "is a published combination")
    if cann_key(cv) < cann_key(canns[0]):
        older = sorted({r["torch_npu"] for r in rows if r["cann"] == cv}, key=version_key)[-3:]
        alt = f", or a torch_npu released for CANN {cv}: {', '.join(older)}" if older else ""
        return Check("compatibility", FAIL, f"CANN {cv} is older than what torch_npu {n.version} was released for "
                                            f"({', '.join(canns)}); expect missing symbols or failing ops",
                     f"install CANN {canns[-1]}{alt}")
    return Check("compatibility", WARN, f"CANN {cv} is newer than the pairing published for torch_npu {n.version} "
                                        f"({', '.join(canns)}); usually works, not guaranteed",
                 f"if ops fail, use CANN {canns[-1]} or a torch_npu released for CANN {cv}")


# ---------------------------------------------------------------- environment variables
def check_autoload(f: Facts) -> CheckResult:
    t, n = f.torch, f.torch_npu
    flag = f.environment.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
    if t is None:
        return None
    if (release_line(t.version) or (0, 0)) < (2, 5):
        return Check("autoload", INFO, f"torch {t.version} has no device-backend autoload: scripts must "
                                       "'import torch_npu' (ascend-compat run does it for you)")
    if flag == "0":
        return Check("autoload", INFO, "TORCH_DEVICE_BACKEND_AUTOLOAD=0: 'import torch' will not load torch_npu; "
                                       "scripts must import torch_npu themselves",
                     "unset TORCH_DEVICE_BACKEND_AUTOLOAD unless you set it to work around a broken torch_npu")
    if n is None:
        return None
    if not any(g == "torch.backends" for g, _, _ in n.entry_points):
        return Check("autoload", INFO, f"torch_npu {n.version} declares no 'torch.backends' entry point: "
                                       "'import torch' does not load it; import torch_npu explicitly")
    return Check("autoload", OK, "torch_npu registers the 'torch.backends' entry point: 'import torch' loads it")


def check_visible_devices(f: Facts) -> CheckResult:
    """``ASCEND_RT_VISIBLE_DEVICES`` read exactly as torch_npu reads it (:mod:`ascend_compat.knowledge.
    visible_devices`, the parser the simulator and the shim use): the raw value, not stripped."""
    value = f.environment.env.get(visible_devices.ASCEND)
    if value is None:
        return None
    name, var = "visible_devices", visible_devices.ASCEND
    ids = visible_devices.ascend_ids(value)
    read = visible_devices.ascend_read_part(value)
    if not ids:
        what = "is empty" if value == "" else "starts with no device id"
        return Check(name, FAIL, f"{var}={value!r} {what}: torch_npu reads comma-separated device ids from it, "
                                 "so no NPU is visible",
                     f"set it to ascending device ids, e.g. `{var}=0,1,2,3`, or unset it.")
    if read != value or ",," in read:  # trailing characters, or an empty element, end the list early
        return Check(name, FAIL, f"{var}={value!r} is read as {','.join(map(str, ids))} only: torch_npu stops at "
                                 "the first character that is neither a digit nor a comma, and at an empty element",
                     f"write the ids without spaces or other characters, e.g. `{var}={_wanted(value)}`.")
    if any(b <= a for a, b in zip(ids, ids[1:])):
        twice = len(set(ids)) != len(ids)
        return Check(name, FAIL, f"{var}={value} " + ("lists a device twice" if twice else "is not ascending")
                     + ": torch_npu then sees no device (torch.npu.is_available() is False)",
                     f"use `{var}={','.join(map(str, sorted(set(ids))))}` and map ranks to devices in your code "
                     "instead.")
    count = f.sim_devices if f.simulated else f.device_count
    if count is not None:
        nums, _ = f.devices
        valid = list(range(count)) if f.simulated or not nums else nums
        bad = [i for i in ids if i not in valid]
        if bad:
            return Check(name, FAIL, f"{var}={value} names device(s) {bad} but only {valid} exist: NPU init fails "
                                     "with EE1001 / 207004, or the devices from the first missing one are not visible",
                         f"use ids among {valid}.")
        return Check(name, OK, f"{var}={value} ({len(ids)} of {count} device(s))")
    return Check(name, INFO, f"{var}={value} (cannot verify the range: device count unknown)")


def _wanted(value: str) -> str:
    """The ids a user meant in a value torch_npu reads only partly (``"0, 1"`` -> ``"0,1"``)."""
    import re

    return ",".join(re.findall(r"\d+", value)) or "0,1"


def check_cuda_env(f: Facts) -> CheckResult:
    """CUDA / NCCL variables set here, judged by their knowledge records (what the shim translates,
    what check reports): a translated variable whose Ascend name is unset only works under the shim."""
    out = []
    torch_version = f.torch.version if f.torch and release_line(f.torch.version) else None
    for name in sorted(f.environment.env):
        rec = env_vars.lookup(name)
        if rec is None or not rec.versions.applies(torch=torch_version):
            continue
        value = f.environment.get(name)
        if rec.shim_maps and f.environment.get(rec.ascend) is None:
            shim = ""
            if rec.converter == "visible_devices":  # what the shim would set, read by the one parser
                shown = visible_devices.to_ascend(f.environment.env[name])
                shim = f"; under the shim {rec.ascend}={shown.value!r}" + (" (no NPU)" if not shown.value else "")
            out.append(Check("cuda_env", WARN, f"{name}={value} is set but Ascend reads {rec.ascend}, which is unset "
                                               f"({rec.reason}){shim}",
                             f"{rec.advice[:-1]}, or run under ascend-compat run, which translates it"))
        elif rec.shim_maps:
            out.append(Check("cuda_env", INFO, f"{name}={value} is set; Ascend uses "
                                               f"{rec.ascend}={f.environment.get(rec.ascend)} instead"))
        else:
            out.append(Check("cuda_env", INFO, f"{name}={value}: {rec.reason}", rec.advice))
    return out


def _paths(value: str | None) -> list[str]:
    return [p.rstrip("/") for p in (value or "").split(":") if p]


def check_set_env(f: Facts) -> CheckResult:
    c = f.primary_cann()
    env = f.environment
    if c is None or f.simulated and f.torch_npu is None:
        return None
    sourced_hint = f"`source {c.set_env}`" if c.set_env else SET_ENV_HINT
    home = env.get("ASCEND_HOME_PATH")
    out = []
    if not home:
        out.append(Check("set_env", FAIL, "ASCEND_HOME_PATH is not set: the CANN environment script was not sourced "
                                          "in this shell", sourced_hint + " (add it to ~/.bashrc or the job script)"))
    elif not env.path(home).is_dir():
        out.append(Check("set_env", FAIL, f"ASCEND_HOME_PATH={home} does not exist (stale environment from an "
                                          "uninstalled CANN)", sourced_hint + " in a fresh shell"))
    else:
        out.append(Check("set_env", OK, f"ASCEND_HOME_PATH={home}"))
        real_home = env.path(home).resolve()
        newest = [i for i in f.cann if i.source == "default location"]
        if newest and env.path(newest[0].home).resolve() != real_home:
            out.append(Check("set_env", WARN, f"ASCEND_HOME_PATH points to {home} but the default install is "
                                              f"{newest[0].home} (CANN {newest[0].version})",
                             "source the set_env.sh of the CANN version you mean to use, in a fresh shell"))
    opp = env.get("ASCEND_OPP_PATH")
    if not opp:
        out.append(Check("opp_path", FAIL, "ASCEND_OPP_PATH is not set: operators cannot be loaded "
                                           "(error 148049 / ERR00008)", sourced_hint))
    elif not env.path(opp).is_dir():
        out.append(Check("opp_path", FAIL, f"ASCEND_OPP_PATH={opp} does not exist", sourced_hint + " in a fresh shell"))
    if home and env.path(home).is_dir():
        libs = _paths(env.get("LD_LIBRARY_PATH"))
        h = home.rstrip("/")
        wanted = [f"{h}/lib64", f"{h}/runtime/lib64", f"{h}/{c.arch}-linux/lib64" if c.arch else ""]
        if not any(w and w in libs for w in wanted):
            out.append(Check("ld_library_path", WARN, f"LD_LIBRARY_PATH does not contain {h}/lib64 (or "
                                                      f"runtime/lib64): libascendcl.so may not be found",
                             sourced_hint))
        if any(p.endswith("/stub") for p in libs):
            out.append(Check("ld_library_path", WARN, "LD_LIBRARY_PATH contains a CANN stub directory: programs "
                                                      "fail with 100039 (compiling stub mode)",
                             "remove the CANN stub directories from LD_LIBRARY_PATH"))
    return out


def check_runtime_settings(f: Facts) -> CheckResult:
    env = f.environment
    out = []
    if env.get("ASCEND_LAUNCH_BLOCKING") == "1":
        out.append(Check("runtime_settings", WARN, "ASCEND_LAUNCH_BLOCKING=1 runs every op synchronously (slow)",
                         "unset it once you have found the failing op"))
    level = env.get("ASCEND_GLOBAL_LOG_LEVEL")
    if level is not None and level in ("0", "1"):
        out.append(Check("runtime_settings", WARN, f"ASCEND_GLOBAL_LOG_LEVEL={level} (debug/info logging) slows "
                                                   "training and fills the disk",
                         "use 3 (error, the default) outside debugging"))
    tips = []
    if env.get("TASK_QUEUE_ENABLE") is None:
        tips.append("TASK_QUEUE_ENABLE=2 (op dispatch pipelining; 1 is the default)")
    alloc = env.get("PYTORCH_NPU_ALLOC_CONF") or ""
    if "expandable_segments" not in alloc:
        tips.append("PYTORCH_NPU_ALLOC_CONF=expandable_segments:True (less fragmentation, fewer OOMs)")
    if env.get("HCCL_CONNECT_TIMEOUT") is None or env.get("HCCL_EXEC_TIMEOUT") is None:
        tips.append(f"multi-node: HCCL_CONNECT_TIMEOUT (default {hccl_env.DEFAULT_CONNECT_TIMEOUT} s) / "
                    f"HCCL_EXEC_TIMEOUT (default {hccl_env.DEFAULT_EXEC_TIMEOUT} s); ascend-compat doctor --cluster "
                    "checks a job's set-up")
    if tips:
        out.append(Check("runtime_settings", INFO, "recommended settings: " + "; ".join(tips)))
    return out


def check_simulator(f: Facts) -> CheckResult:
    if not f.simulated:
        return None
    standin = f.torch_npu_standin
    ver = f.environment.get("ASCEND_COMPAT_SIM_TORCH_NPU_VERSION") or (standin.version if standin else "newest")
    return Check("simulator", INFO, f"running under the ascend-compat simulator: {f.sim_devices} simulated 'npu' "
                                    f"device(s), torch_npu {ver} op coverage emulated; results say nothing about "
                                    "real hardware speed or CANN/driver setup")


CHECKS: list[Callable[[Facts], CheckResult]] = [
    check_simulator, check_python, check_torch, check_torch_npu, check_torch_npu_import, check_cann,
    check_cann_components, check_driver, check_firmware, check_devices, check_npu_smi, check_compatibility,
    check_autoload, check_visible_devices, check_cuda_env, check_set_env, check_runtime_settings,
]


def run_doctor(environment: Environment | None = None) -> list[Check]:
    """Run every check against ``environment`` (default: this machine) and return the results."""
    facts = Facts(environment or Environment())
    results: list[Check] = []
    for fn in CHECKS:
        try:
            res = fn(facts)
        except Exception as exc:  # a check must never take the whole report down
            res = Check(fn.__name__.replace("check_", ""), WARN, f"check crashed: {type(exc).__name__}: {exc}",
                        "please report this as an ascend-compat bug")
        if res is None:
            continue
        results.extend([res] if isinstance(res, Check) else res)
    return results


def summary(checks: list[Check]) -> dict[str, int]:
    return {s.value: sum(1 for c in checks if c.status is s) for s in Status}


def render_text(checks: list[Check]) -> str:
    """Aligned text: ``[FAIL] name   detail`` then an indented ``fix:`` line."""
    width = max((len(c.name) for c in checks), default=0)
    lines = []
    for c in checks:
        lines.append(f"[{c.status.value:^4}] {c.name:<{width}}  {c.detail}")
        if c.fix:
            lines.append(f"       {'':<{width}}  fix: {c.fix}")
    s = summary(checks)
    lines.append("")
    lines.append(", ".join(f"{n} {k}" for k, n in s.items()))
    return "\n".join(lines)


def exit_code(checks: list[Check]) -> int:
    return 1 if any(c.status is FAIL for c in checks) else 0

