"""Rule ``device-string``: "cuda" device string."""
from __future__ import annotations

from ascend_compat.analysis.rules.base import AUTO, Rule
from ascend_compat.knowledge import devices

RULE = Rule('device-string', 'device', AUTO, '"cuda" device string',
            'The shim translates "cuda"/"cuda:N" wherever torch takes a device (factories, .to, '
            'torch.device, map_location, autocast and streams). Arbitrary strings are never touched.',
            'use "npu" / "npu:N".', order=2)
TRIGGERS = ("cuda",)
#: calls whose first positional argument is a device (int allowed where torch accepts an ordinal)
DEVICE_FIRST_ARG = frozenset({
    "torch.device", "torch.set_default_device", "torch.get_device_module", "torch.Generator",
    "torch.Stream", "torch.Event", "torch.cuda.set_device", "torch.cuda.device", "torch.npu.set_device",
    "torch.accelerator.set_device_index", "torch.is_autocast_enabled", "torch.get_autocast_dtype",
    "torch.set_autocast_enabled", "torch.get_autocast_gpu_dtype",
    # a device mesh's first argument is its device type
    "torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh",
    "torch.distributed.device_mesh.DeviceMesh", "torch.distributed.DeviceMesh",
})
#: keyword arguments that take a device
DEVICE_KW = frozenset({"device", "device_type", "map_location", "output_device", "pin_memory_device",
                       "device_id", "devices", "device_ids", "accelerator"})
#: of those, the ones where an int is a device ordinal
INT_DEVICE_KW = frozenset({"device"})


def on_call(v, node, q, attr) -> None:
    """Device positions of a call: ``.to(d)``, ``torch.device(d)``, ``device=d`` and the like."""
    args = node.args
    if args:
        if q is None and attr in ("to", "to_empty", "pin_memory"):
            v.device_arg(args[0], allow_int=attr == "to")
        elif q in DEVICE_FIRST_ARG:
            v.device_arg(args[0], allow_int=q == "torch.device")
    for kw in node.keywords:
        if kw.arg in DEVICE_KW:
            v.device_arg(kw.value, allow_int=kw.arg in INT_DEVICE_KW)


def rewrite_string(body: str):
    """``"cuda:1"`` -> ``"npu:1"`` (also the head of an f-string)."""
    return devices.rewrite_head(body) if body.startswith("cuda") else None
