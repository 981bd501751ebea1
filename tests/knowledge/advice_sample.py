import os
import torch
import torch.nn as nn
import torch.distributed as dist

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    pass
v = torch.cuda.nccl.version()
torch.cuda.synchronize()
torch.cuda.get_device_capability()
m = nn.DataParallel(nn.Linear(2, 2)).cuda()
x = torch.zeros(2, device="cuda:0")
dist.init_process_group("nccl")
dist.all_reduce(x, op=dist.ReduceOp.AVG)
os.environ["NCCL_DEBUG"] = "INFO"
os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
torch.backends.cudnn.benchmark = True
y = torch.randn(3, dtype=torch.float64).cuda()
