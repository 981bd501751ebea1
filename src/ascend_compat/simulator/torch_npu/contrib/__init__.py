"""``torch_npu.contrib`` of the stand-in: ``transfer_to_npu``, the entry point scripts already
ported to Ascend start with (served from ``ascend_compat._transfer_to_npu``: see ``_stand_in``). torch_npu's other contrib helpers (its fused module replacements) are
not emulated: importing one raises ModuleNotFoundError naming it."""


def __getattr__(name: str):
    # ``from torch_npu.contrib import transfer_to_npu`` looks the submodule up under this package's
    # own name; route it through ``torch_npu.contrib.<name>``, which the stand-in's finder serves
    if name == "transfer_to_npu":
        import importlib

        return importlib.import_module("torch_npu.contrib.transfer_to_npu")
    raise AttributeError(f"module 'torch_npu.contrib' has no attribute {name!r}")
