"""A launcher that only counts devices, then starts one rank that trains on the device (as accelerate's,
DeepSpeed's and torchrun's launchers do); with ``cpu`` the rank trains on the CPU instead."""
import subprocess
import sys
from pathlib import Path

import torch

print("LAUNCHER sees", torch.cuda.device_count(), "device(s)", flush=True)
rank = Path(__file__).with_name("child.py") if sys.argv[1:] != ["cpu"] else Path(__file__).with_name("cpu_rank.py")
subprocess.run([sys.executable, str(rank)], check=True)
