"""npu tensors shared between processes through torch.multiprocessing (issue 23, item 14), as torch_npu's
``multiprocessing/reductions.py`` shares them: a spawned child gets the parent's device memory."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import subproc
from _subproc import clean_env

SCRIPT = Path(__file__).parent / "scripts" / "mp_share.py"


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    import subprocess

    proc = subprocess.run([sys.executable, str(SCRIPT)], env=clean_env(), capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path_factory.mktemp("mp")))
    return subproc.result(proc)


def test_child_writes_reach_the_parents_device_memory(shared):
    assert shared["exit"] == "0" and shared["plus_one"] == "True"
    assert shared["base"] == "[0.0,0.0,7.0,7.0,0.0,0.0]"  # a view's write lands in its base's storage


def test_child_gets_npu_parameters_and_the_parent_keeps_training(shared):
    assert shared["child_weight"] == "npu:0" and shared["child_view"] == "npu:0"
    assert shared["kind"] == "Parameter" and shared["requires_grad"] == "True"
    assert shared["grad"] == "npu:0"
    assert shared["allocated_same"] == "True"  # moved into shared memory, not duplicated


def test_npu_storages_are_refused_as_torch_npu_refuses_them(shared):
    assert shared["storage"] == "Cannot_pickle_NPU_storage;_try_pickling_a_NPU_tensor_instead"


def test_non_leaf_tensors_requiring_grad_are_refused():
    from ascend_compat.simulator import _ipc

    x = torch.ones(2, device="npu", requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        _ipc.reduce_npu_tensor(x)
