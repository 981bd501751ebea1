"""Spawned child processes (``torch.multiprocessing.spawn``, spawn-context DataLoader workers) get
the shim too.

A spawned child re-imports the user's script as ``__mp_main__`` and unpickles its target; nothing
there imports ascend-compat, so ``torch.device("cuda")`` would mean CUDA again. While the shim is
active, the child's command line (``python -c "from multiprocessing.spawn import spawn_main; ..."``)
starts with ``import ascend_compat``, which activates in the child from the same environment
(``ASCEND_COMPAT_SIMULATE=1`` set by ``ascend-compat run --simulate``, or an installed torch_npu).
"""
from __future__ import annotations

from typing import Any

from ascend_compat.cuda_shim.registry import Patch, hit, make_wrapper

PREFIX = "import ascend_compat; "


def _command_line(original):
    def get_command_line(**kwds: Any) -> list:
        cmd = list(original(**kwds))
        if "-c" in cmd:
            i = cmd.index("-c") + 1
            if i < len(cmd) and not cmd[i].startswith(PREFIX):
                cmd[i] = PREFIX + cmd[i]
                hit("multiprocessing spawn child activates the shim")
        return cmd

    return make_wrapper(original, get_command_line)


def patches() -> list:
    return [
        Patch("multiprocessing.spawn:get_command_line", _command_line,
              "spawned children must translate CUDA calls too", wrap=True, concept="multiprocessing"),
    ]
