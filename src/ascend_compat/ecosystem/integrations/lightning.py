"""Lightning on the NPU: an ``"npu"`` accelerator, and the selection paths that would skip it.

Lightning (tested: 2.6) has no Ascend accelerator (Lightning-AI/pytorch-lightning#19498 closed).
:func:`apply` declares, for the unified ``lightning`` package and the standalone
``pytorch_lightning`` / ``lightning_fabric`` packages (each when imported):

* ``NPUAccelerator`` registered as ``"npu"`` in the Trainer's ``AcceleratorRegistry`` and Fabric's
  ``ACCELERATOR_REGISTRY``: ``Trainer(accelerator="npu", devices=N)``, ``Fabric(accelerator="npu")``;
  ``devices`` takes what CUDA takes (int, -1, "auto", "0,1", list of indices);
* ``accelerator="auto"`` picks ``"npu"`` when an NPU is available (Lightning's own choice would be
  CPU, silently - the boltzgen#266 symptom);
* ``accelerator="gpu"`` means the NPU when there is no CUDA/MPS device (else "No supported gpu
  backend found!"); ``accelerator="cuda"`` likewise, so a script written for CUDA trains on the NPU;
* one NPU device gets ``SingleDeviceStrategy(npu:i)`` (Lightning puts unknown accelerators on CPU);
* ``precision="16-mixed"/"bf16-mixed"`` autocasts on ``npu`` (Lightning would autocast ``cuda``,
  which does nothing to npu tensors);
* the Trainer's device summary names the NPU (``NPU available: True (Ascend910B3), used: True``)
  where Lightning would print ``GPU available: False, used: False`` while training on ``npu:0``.

DDP needs nothing more: Lightning takes the process-group backend from
``torch.distributed.Backend.default_device_backend_map``, where torch_npu (and the simulator)
register ``npu -> hccl``. Multi-process runs: ``torchrun --nproc_per_node N -m ascend_compat run
[--simulate] train.py`` (Lightning's own subprocess launcher restarts ``python train.py``, which would
not run under ascend-compat unless the script imports it).

Every change is undone by ``ascend_compat.deactivate()``; nothing imports Lightning eagerly.
"""
from __future__ import annotations

from typing import Any

__all__ = ["apply", "patches", "npu_available", "parse_devices", "TESTED_VERSIONS"]

TESTED_VERSIONS = "lightning>=2.2,<3"
# (distribution, trainer package, fabric package)
_FLAVOURS = (
    ("lightning", "lightning.pytorch", "lightning.fabric"),
    ("pytorch-lightning", "pytorch_lightning", "lightning_fabric"),
)
_CONNECTOR = "trainer.connectors.accelerator_connector:_AcceleratorConnector"
_FABRIC_CONNECTOR = "connector:_Connector"
_PATCHES: list = []
_CLASSES: dict = {}


def npu_available() -> bool:
    """True when an NPU backend is registered and has a device (never imports torch_npu itself)."""
    import torch

    npu = getattr(torch, "npu", None)
    try:
        return bool(npu is not None and npu.is_available())
    except RuntimeError:
        return False


def _real_cuda_available() -> bool:
    """CUDA availability with the shim's disguise removed (False on an NPU machine)."""
    import torch

    from ascend_compat.cuda_shim.patches.cuda_namespace import real_cuda

    with real_cuda():
        return torch.cuda.is_available()


def parse_devices(devices: Any) -> list[int]:
    """Lightning ``devices`` for the NPU -> device indices (validated against the device count).

    ``"auto"`` / ``-1`` / ``"-1"``: all; ``N`` / ``"N"``: the first N; ``"0,2"`` / ``[0, 2]``: those.
    """
    import torch

    count = torch.npu.device_count()
    if devices in ("auto", -1, "-1", None):
        wanted = list(range(count))
    elif isinstance(devices, int) and not isinstance(devices, bool):
        wanted = list(range(devices))
    elif isinstance(devices, str) and "," in devices:
        wanted = [int(x) for x in devices.split(",") if x.strip()]
    elif isinstance(devices, str) and devices.strip().isdigit():
        wanted = list(range(int(devices)))
    elif isinstance(devices, (list, tuple)):
        wanted = [int(x) for x in devices]
    else:
        raise ValueError(f"ascend-compat: devices={devices!r} is not a valid NPU selection "
                         "(use an int, -1, 'auto', '0,1' or a list of indices)")
    bad = [i for i in wanted if not 0 <= i < count]
    if not wanted or bad:
        raise ValueError(f"ascend-compat: devices={devices!r} asks for NPU(s) {bad or wanted} but "
                         f"{count} NPU(s) are visible (ASCEND_RT_VISIBLE_DEVICES)")
    return wanted


class _NPUMethods:
    """The accelerator protocol shared by Trainer and Fabric accelerators (static methods as Lightning's)."""

    def setup_device(self, device) -> None:
        import torch

        if device.type != "npu":
            raise ValueError(f"NPUAccelerator: device should be an npu device, got {device}")
        torch.npu.set_device(device)

    def teardown(self) -> None:
        import torch

        torch.npu.empty_cache()

    def get_device_stats(self, device) -> dict:
        import torch

        return dict(torch.npu.memory_stats(device))

    @staticmethod
    def parse_devices(devices: Any) -> list[int]:
        return parse_devices(devices)

    @staticmethod
    def get_parallel_devices(devices: Any) -> list:
        import torch

        return [torch.device("npu", i) for i in parse_devices(devices)]

    @staticmethod
    def auto_device_count() -> int:
        import torch

        return torch.npu.device_count() if npu_available() else 0

    @staticmethod
    def is_available() -> bool:
        return npu_available()

    @staticmethod
    def name() -> str:
        return "npu"

    @classmethod
    def register_accelerators(cls, accelerator_registry) -> None:
        accelerator_registry.register("npu", cls, description="Huawei Ascend NPU (ascend-compat)")


def accelerator_class(package: str):
    """The NPU accelerator class for ``package`` ("lightning.pytorch", "lightning.fabric", ...)."""
    if package not in _CLASSES:
        import importlib

        base = importlib.import_module(f"{package}.accelerators").Accelerator
        _CLASSES[package] = type("NPUAccelerator", (_NPUMethods, base),
                                 {"__module__": __name__, "__doc__": "Lightning accelerator for Ascend NPUs."})
    return _CLASSES[package]


def _is_npu_flag(flag: Any) -> bool:
    return flag == "npu" or isinstance(flag, _NPUMethods)


def _make_registration(registry_cls):
    class _Registration(registry_cls):
        """Register ``"npu"`` in a Lightning accelerator registry when its module is imported."""

        def apply(self) -> bool:
            where = self._resolve()
            if where is None:
                return False
            owner, attr = where
            registry = getattr(owner, attr, None)
            if registry is None or "npu" in registry:  # a Lightning with its own npu entry wins
                return False
            accelerator_class(self.module_name.rsplit(".", 1)[0]).register_accelerators(registry)
            self._registry = registry
            self._applied = True
            return True

        def revert(self) -> None:
            if self._applied:
                self._registry.pop("npu", None)
                self._applied = False

    return _Registration


def _select_auto(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def _select_auto_accelerator(*args, **kwargs):
        if npu_available():
            hit("lightning accelerator='auto' -> npu")
            return "npu"
        return original(*args, **kwargs)

    return make_wrapper(original, _select_auto_accelerator)


def _gpu_backend(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def _choose_gpu_accelerator_backend(*args, **kwargs):
        if npu_available() and not _real_cuda_available():
            hit("lightning accelerator='gpu' -> npu")
            return "npu"
        return original(*args, **kwargs)

    return make_wrapper(original, _choose_gpu_accelerator_backend)


def _connector_init(original):
    from ascend_compat.cuda_shim.registry import hit, make_wrapper

    def __init__(self, *args, **kwargs):
        if kwargs.get("accelerator") == "cuda" and npu_available() and not _real_cuda_available():
            hit("lightning accelerator='cuda' -> npu")
            kwargs["accelerator"] = "npu"
        return original(self, *args, **kwargs)

    return make_wrapper(original, __init__)


def _choose_strategy(original):
    from ascend_compat.cuda_shim.registry import make_wrapper

    def _choose_strategy(self, *args, **kwargs):
        chosen = original(self, *args, **kwargs)
        devices = getattr(self, "_parallel_devices", None) or []
        device = getattr(chosen, "root_device", None)
        if (_is_npu_flag(self._accelerator_flag) and len(devices) == 1 and device is not None
                and device.type == "cpu"):
            return type(chosen)(device=devices[0])  # SingleDeviceStrategy on the NPU, not the CPU
        return chosen

    return make_wrapper(original, _choose_strategy)


def _precision(original):
    from ascend_compat.cuda_shim.registry import make_wrapper

    def _check_and_init_precision(self, *args, **kwargs):
        plugin = original(self, *args, **kwargs)
        if _is_npu_flag(self._accelerator_flag) and getattr(plugin, "device", None) == "cuda" \
                and type(plugin).__name__ == "MixedPrecision":
            return type(plugin)(plugin.precision, "npu")
        return plugin

    return make_wrapper(original, _check_and_init_precision)


def _device_info(original):
    """Lightning's ``_log_device_info`` with the NPU in place of the GPU line (and of the "available but
    not used" hint); Lightning's own function when no NPU is available or its helpers are not found."""
    from ascend_compat.cuda_shim.registry import make_wrapper

    def _log_device_info(trainer) -> None:
        g = original.__globals__
        helpers = [g.get(n) for n in ("rank_zero_info", "rank_zero_warn", "XLAAccelerator", "PossibleUserWarning")]
        if not npu_available() or any(h is None for h in helpers):
            return original(trainer)
        info, warn, xla, possible = helpers
        import torch

        used = isinstance(getattr(trainer, "accelerator", None), _NPUMethods)
        info(f"NPU available: True ({torch.npu.get_device_name()}), used: {used}")
        tpu_cores = trainer.num_devices if isinstance(trainer.accelerator, xla) else 0
        info(f"TPU available: {xla.is_available()}, using: {tpu_cores} TPU cores")
        if not used:
            warn("NPU available but not used. You can set it by doing `Trainer(accelerator='npu')`.",
                 category=possible)
        if xla.is_available() and not isinstance(trainer.accelerator, xla):
            warn("TPU available but not used. You can set it by doing `Trainer(accelerator='tpu')`.")

    return make_wrapper(original, _log_device_info)


def patches() -> list:
    """The declared changes for every Lightning flavour (same objects every call)."""
    from ascend_compat.cuda_shim.registry import Patch

    if _PATCHES:
        return list(_PATCHES)
    registration = _make_registration(Patch)
    for dist, trainer, fabric in _FLAVOURS:
        spec = f"{dist}>=2.0"

        def p(target, make, why, **kw):
            return Patch(target, make, why, spec, wrap=True, optional=True, defer=True, concept="ecosystem", **kw)

        _PATCHES.extend([
            registration(f"{trainer}.accelerators:AcceleratorRegistry", None, "Lightning has no NPU accelerator",
                         spec, optional=True, defer=True, rebind=False, concept="ecosystem"),
            registration(f"{fabric}.accelerators:ACCELERATOR_REGISTRY", None, "Fabric has no NPU accelerator",
                         spec, optional=True, defer=True, rebind=False, concept="ecosystem"),
            p(f"{fabric}.utilities.device_parser:_select_auto_accelerator", _select_auto,
              "accelerator='auto' would choose the CPU on an NPU machine"),
            p(f"{trainer}.trainer.setup:_log_device_info", _device_info,
              "the Trainer's summary says 'GPU available: False' while it trains on the NPU"),
        ])
        for connector in (f"{trainer}.{_CONNECTOR}", f"{fabric}.{_FABRIC_CONNECTOR}"):
            _PATCHES.extend([
                p(f"{connector}._choose_auto_accelerator", _select_auto,
                  "the connector's own accelerator='auto' choice (Fabric() by default) would pick the CPU",
                  rebind=False),
                p(f"{connector}._choose_gpu_accelerator_backend", _gpu_backend,
                  "accelerator='gpu' knows only CUDA and MPS", rebind=False),
                p(f"{connector}.__init__", _connector_init,
                  "accelerator='cuda' in a CUDA script means the NPU under ascend-compat", rebind=False),
                p(f"{connector}._choose_strategy", _choose_strategy,
                  "one device of an unknown accelerator gets a CPU SingleDeviceStrategy", rebind=False),
                p(f"{connector}._check_and_init_precision", _precision,
                  "mixed precision would autocast 'cuda', which leaves npu tensors in float32", rebind=False),
            ])
    return list(_PATCHES)


def apply() -> int:
    """Declare the Lightning patches (idempotent); returns how many were applied now."""
    from ascend_compat.ecosystem.integrations import _apply as _library_patches

    return _library_patches.apply_once(patches())

