"""One parser per visible-devices variable (``knowledge.visible_devices``), and every consumer reads it:
the simulator's device count, the shim's CUDA_VISIBLE_DEVICES translation, doctor (issue 23 item 5)."""
from __future__ import annotations

import json

import pytest

from ascend_compat.knowledge import visible_devices as vd
from subproc import check, run_python


@pytest.mark.parametrize("value, ids", [
    (None, None), ("", []), ("0", [0]), ("0, 1", [0]), ("0,1 ,2", [0, 1]), ("0,,1", [0]), ("0,1,", [0, 1]),
    ("3,5x,7", [3, 5]), ("a0,1", []), (",0", []),
])
def test_ascend_ids_as_torch_npu_reads_them(value, ids):
    assert vd.ascend_ids(value) == ids


@pytest.mark.parametrize("value, ids", [
    (None, None), ("", []), ("-1", []), ("0, 1", [0, 1]), ("0,-1,1", [0]), ("1,x,2", [1]), ("0,0", []),
    ("GPU-a,GPU-b", ["GPU-a", "GPU-b"]), ("GPU-a,0", ["GPU-a"]),
])
def test_cuda_ids_as_cuda_reads_them(value, ids):
    assert vd.cuda_ids(value) == ids


_PROBE = "import json, torch; print(json.dumps([torch.cuda.device_count(), torch.cuda.is_available()]))"


@pytest.mark.parametrize("env, count", [
    ({"ASCEND_RT_VISIBLE_DEVICES": "0, 1"}, 1),   # torch_npu stops at the space
    ({"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, 2),
    ({"CUDA_VISIBLE_DEVICES": "0, 1"}, 2),        # CUDA strips each element
    ({"CUDA_VISIBLE_DEVICES": "-1"}, 0),          # CUDA's "no GPU" (was: every NPU stayed visible)
    ({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, 1),      # the devices from the invalid id on are hidden
    ({"CUDA_VISIBLE_DEVICES": ""}, 0),
    ({"CUDA_VISIBLE_DEVICES": "1"}, 1),
])
def test_shimmed_process_sees_what_the_parsers_say(env, count):
    out = check(run_python(f"import ascend_compat\n{_PROBE}", ASCEND_COMPAT_SIMULATE="1",
                           ASCEND_COMPAT_SIM_DEVICES="2", **env))
    assert json.loads(out.strip().splitlines()[-1]) == [count, count > 0]
    name, value = next(iter(env.items()))
    expected = (vd.ascend_count(value, 2) if name == vd.ASCEND
                else vd.ascend_count(vd.to_ascend(value).value, 2))
    assert expected == count
