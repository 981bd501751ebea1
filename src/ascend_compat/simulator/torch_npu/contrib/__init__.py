"""``torch_npu.contrib`` of the stand-in: :mod:`.transfer_to_npu`, the entry point scripts already
ported to Ascend start with. torch_npu's other contrib helpers (its fused module replacements) are
not emulated: importing one raises ModuleNotFoundError naming it."""
