"""How CUDA code names a device, and what each form becomes on Ascend (records of kind ``"device"``).

:func:`is_cuda_string` is the grammar of a CUDA device string (exactly ``"cuda"`` or ``"cuda:N"``;
``"ckpt_cuda.pt"`` is not one) and :func:`rewrite` its Ascend form; the shim's device translation
and check's suggestions both call them.
"""
from __future__ import annotations

from typing import Optional

from ascend_compat.knowledge.records import AUTO, PARTIAL, Construct, Versions

#: the device type CUDA devices become (torch_npu's PrivateUse1 backend name)
TARGET = "npu"


def is_cuda_string(value: str) -> bool:
    """True for exactly ``"cuda"`` or ``"cuda:N"`` (N a non-negative ASCII decimal integer)."""
    if value == "cuda":
        return True
    return value.startswith("cuda:") and value[5:].isdigit() and value[5:].isascii()


def rewrite(value: str, target: str = TARGET) -> str:
    """``"cuda"`` -> ``"npu"``, ``"cuda:N"`` -> ``"npu:N"``; any other string is returned unchanged."""
    return target + value[4:] if is_cuda_string(value) else value


def rewrite_head(value: str, target: str = TARGET) -> str:
    """``value``, a string that starts with ``"cuda"``, with that head replaced: the wider grammar of
    strings built at run time (``"cuda:{}"``, ``f"cuda:{rank}"``) that :func:`rewrite` leaves alone."""
    return target + value[len("cuda"):]


_X = "import torch\nx = torch.ones(1, device='cuda')\n"

RECORDS: tuple[Construct, ...] = (
    Construct("device", '"cuda"', "device-string", AUTO, '"npu"',
              "the shim translates the string wherever torch takes a device",
              'use "npu", or keep "cuda" while the shim is active.',
              "import torch\nprint(torch.ones(1, device='cuda').device.type)", "npu",
              rewrite=('"cuda"', '"npu"')),
    Construct("device", '"cuda:N"', "device-string", AUTO, '"npu:N"',
              "the shim translates the indexed form to the NPU of the same index",
              'use "npu:N" with the same index.',
              "import torch\nprint(torch.zeros(1, device='cuda:0').device)", "npu:0",
              rewrite=('"cuda:0"', '"npu:0"')),
    Construct("device", 'torch.device("cuda", N)', "device-string", AUTO, 'torch.device("npu", N)',
              "the shim translates a torch.device built from a type and an index",
              'use torch.device("npu", N).',
              "import torch\nprint(torch.device('cuda', 1))", "npu:1",
              rewrite=('torch.device("cuda", 1)', 'torch.device("npu", 1)')),
    Construct("device", "integer device ordinal", "int-device", AUTO, 'torch.device("npu", N)',
              "a bare integer names the current accelerator's device N since torch 2.5",
              'use torch.device("npu", N) to name the device explicitly.',
              "import torch\nprint(torch.ones(1, device=0).device)", "npu:0",
              versions=Versions(torch=">=2.5")),
    Construct("device", "Tensor.is_cuda", "is-cuda", AUTO, "Tensor.is_npu",
              "the shim makes is_cuda True for npu tensors",
              "use Tensor.is_npu, or keep is_cuda while the shim is active.",
              _X + "print(x.is_cuda, x.device.type)", "True npu"),
    Construct("device", 'x.device.type == "cuda"', "device-compare", PARTIAL, 'x.device.type == "npu"',
              "an npu tensor's device type is npu, so the comparison is False and the code takes its "
              "non-CUDA branch",
              'compare with "npu", or test x.device.type != "cpu".',
              _X + "print(x.device.type == 'cuda')", "False",
              rewrite=('x.device.type == "cuda"', 'x.device.type == "npu"')),
    Construct("device", '"cuda" in str(device)', "device-compare", PARTIAL, '"npu" in str(device)',
              "str() of an npu device is npu:N, so the test is False and the code takes its non-CUDA branch",
              'test device.type == "npu" instead of searching str(device).',
              _X + "print('cuda' in str(x.device))", "False"),
    Construct("device", 'device == "cuda" on a string the script set', "device-compare", AUTO,
              'device == "npu"',
              'a string the script sets (device = "cuda", a command-line option) stays "cuda" under the shim, '
              "which translates it where torch takes a device, so the comparison holds as on CUDA",
              'keep it; migrate rewrites both strings to "npu", so they still match.',
              "import torch\ndevice = 'cuda'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
              "x = torch.ones(1, device=device)\nprint(device_type == 'cuda', x.device.type)", "True npu",
              rewrite=("'cuda' in device", "'npu' in device")),
)

BY_NAME: dict[str, Construct] = {r.name: r for r in RECORDS}


def for_rule(rule: str) -> Optional[Construct]:
    """The first device record check reports under ``rule`` (its verdict and advice), or None."""
    return next((r for r in RECORDS if r.rule == rule), None)
