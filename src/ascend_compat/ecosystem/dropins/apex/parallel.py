"""``apex.parallel`` on torch's distributed modules (hccl on Ascend).

* ``DistributedDataParallel(module, message_size=..., delay_allreduce=False, ...,
  gradient_average=True, gradient_predivide_factor=1.0, ...)`` is a
  ``torch.nn.parallel.DistributedDataParallel`` on the module's device (``device_ids`` = that
  device for an accelerator module). apex's bucketing/stream knobs only tune speed and are
  accepted and ignored; ``gradient_average=False`` (summed gradients) raises, torch DDP averages.
* ``SyncBatchNorm(num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
  process_group=None, channel_last=False, fuse_relu=False)`` is ``torch.nn.SyncBatchNorm``
  (``channel_last``/``fuse_relu`` raise). Outside an initialised process group it normalises
  with local statistics, like torch's.
* ``convert_syncbn_model(module, process_group=None, channel_last=False)`` =
  ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``.
"""
from __future__ import annotations

import torch

__all__ = ["DistributedDataParallel", "SyncBatchNorm", "convert_syncbn_model"]


class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """apex's DistributedDataParallel signature on torch DDP; see the module docstring."""

    def __init__(self, module, message_size=10000000, delay_allreduce=False, shared_param=None,
                 allreduce_trigger_params=None, retain_allreduce_buffers=False, allreduce_always_fp32=False,
                 num_allreduce_streams=1, allreduce_communicators=None, gradient_average=True,
                 gradient_predivide_factor=1.0, gradient_average_split_factor=None, prof=False):
        if not gradient_average:
            raise NotImplementedError("apex DistributedDataParallel(gradient_average=False) sums gradients; torch's "
                                      "DistributedDataParallel averages them. Scale the loss by the world size instead.")
        if shared_param is not None or allreduce_trigger_params is not None:
            raise NotImplementedError("apex DistributedDataParallel's shared_param/allreduce_trigger_params have no "
                                      "torch equivalent; drop them.")
        param = next(module.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
        device_ids = None if device.type == "cpu" else [device.index if device.index is not None else 0]
        super().__init__(module, device_ids=device_ids, bucket_cap_mb=max(1, message_size * 4 // (1 << 20)))


class SyncBatchNorm(torch.nn.SyncBatchNorm):
    """apex's SyncBatchNorm signature on torch.nn.SyncBatchNorm; see the module docstring."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, channel_last=False, fuse_relu=False):
        if channel_last or fuse_relu:
            raise NotImplementedError("apex SyncBatchNorm(channel_last=True / fuse_relu=True) is not available on "
                                      "Ascend; use the default layout and apply torch.relu after the layer.")
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats, process_group=process_group)


def convert_syncbn_model(module, process_group=None, channel_last=False):
    """Replace every BatchNorm*d in ``module`` by a SyncBatchNorm (torch's converter)."""
    if channel_last:
        raise NotImplementedError("convert_syncbn_model(channel_last=True) is not available on Ascend.")
    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(module, process_group)
