"""A CUDA script that knows nothing of ascend-compat: prints where its tensor lands."""
import os

import torch

x = torch.ones(2).cuda()
rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "-"))
print(f"CHILD rank={rank} device={x.device} available={torch.cuda.is_available()}", flush=True)
