"""``from torch_npu.contrib import transfer_to_npu`` on the simulated NPU (the stand-in's finder,
``simulator._stand_in``, serves this module under that name: it lives here, above the simulator,
because what it does - activating the shim - belongs to this layer).

On Ascend this torch_npu module patches about 290 CUDA entry points so CUDA code runs on the NPU.
Here it activates ascend-compat's runtime shim, which does that job (``ascend_compat.activate()``),
so a script written for Ascend - beginning with this import - dry-runs unchanged under
``ascend-compat run --simulate``. Importing it when the shim is already active changes nothing.
"""
from __future__ import annotations

import ascend_compat

ascend_compat.activate()
