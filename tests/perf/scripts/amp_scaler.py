"""Mixed precision with a GradScaler: the scaler's own inf/NaN check synchronises in scaler.step(),
which is reported as GradScaler's (with the fused-optimizer fix), not as the user's .item()."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(16, 16).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
scaler = torch.cuda.amp.GradScaler()
for step in range(5):
    x = torch.randn(8, 16, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)                                                    # PLANT device-sync PLANT fused-optimizer
    scaler.update()
    opt.zero_grad()
