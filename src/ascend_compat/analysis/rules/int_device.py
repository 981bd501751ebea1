"""Rule ``int-device``: integer device ordinal."""
from __future__ import annotations

import re

from ascend_compat.analysis.rules.base import AUTO, Rule

RULE = Rule('int-device', 'device', AUTO, 'integer device ordinal',
            'A bare integer device resolves to the current accelerator on torch >= 2.5 (npu:N with '
            'torch_npu) and the shim translates it at API boundaries; on torch < 2.5 it means cuda:N and '
            'fails (Ascend/pytorch#16).',
            'use an explicit device, torch.device("npu", N).', order=5)
#: argparse options declared type=int (``.to(args.gpu)``); reported by the engine's device flow
TRIGGERS = ("type=int",)
#: literal ordinals: ``.to(0)``, ``device=0``, ``torch.device(0)``
TRIGGER_PATTERNS = (re.compile(r"\.to\(\s*\d"), re.compile(r"device\s*[(=]\s*\d"))
