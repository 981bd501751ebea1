"""Planted problems the first script does not have: strided matmul input, channels_last convolution,
pageable blocking host-to-device copy, data-dependent shape, printing a device tensor, tiny ops."""
import torch
import torch.nn as nn

device = "cuda"
torch.manual_seed(0)
conv = nn.Conv2d(3, 8, 3, padding=1).to(device)
lin = nn.Linear(32, 32).to(device)
opt = torch.optim.SGD(list(conv.parameters()) + list(lin.parameters()), lr=0.1)
host_batch = torch.randn(8, 3, 16, 16)
for step in range(4):
    images = host_batch.to(device)                                      # PLANT h2d-copy
    images = images.to(memory_format=torch.channels_last)
    feats = conv(images)                                                # PLANT layout channels_last
    x = torch.randn(32, 8, 32, device=device).permute(1, 2, 0)[:, :, :16]
    y = lin.weight @ x[0]                                               # PLANT layout noncontiguous
    picked = feats[feats > 0]                                           # PLANT device-sync data_dependent
    loss = picked.mean() + y.mean()
    scalars = [torch.ones((), device=device) * i for i in range(150)]  # PLANT tiny-ops
    loss = loss + sum(scalars) * 0
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(loss)                                                         # PLANT device-sync print
