"""``torch_npu.utils`` of the stand-in (torch_npu's ``torch_npu/utils/``)."""
