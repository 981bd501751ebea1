"""``torch_npu._C`` of the stand-in: only the submodules Python code reaches into by name."""
