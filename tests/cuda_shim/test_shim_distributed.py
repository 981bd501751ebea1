"""nccl -> hccl: backend strings, comparisons, availability, env:// init in one process."""
from __future__ import annotations

import socket

import pytest
import torch
import torch.distributed as dist

pytestmark = pytest.mark.usefixtures("shim")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_is_nccl_available_reports_hccl():
    assert dist.is_nccl_available() is dist.is_backend_available("hccl")


@pytest.mark.parametrize("backend, expected", [("nccl", "hccl"), ("cpu:gloo,cuda:nccl", "cpu:gloo,npu:hccl")])
def test_init_process_group_and_comparisons(backend, expected):
    dist.init_process_group(backend=backend, init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    try:
        name = dist.get_backend()
        assert name == expected
        if backend == "nccl":
            assert name == "nccl" and name == dist.Backend.NCCL and dist.get_backend() != "gloo"
        group = dist.new_group([0], backend="nccl")
        assert dist.get_backend(group) == "nccl"
        t = torch.full((2,), 3.0, device="cuda")
        dist.all_reduce(t, group=group)
        assert t.tolist() == [3.0, 3.0]
    finally:
        dist.destroy_process_group()


def test_ddp_with_cuda_device_ids():
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    try:
        model = torch.nn.Linear(2, 2).cuda()
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=["cuda:0"], output_device="cuda:0")
        ddp(torch.ones(1, 2, device="cuda")).sum().backward()
        assert model.weight.grad.device.type == "npu"
    finally:
        dist.destroy_process_group()


def test_device_mesh_cuda():
    from torch.distributed.device_mesh import init_device_mesh

    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_port()}", rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cuda", (1,))
        assert mesh.device_type == "npu"
    finally:
        dist.destroy_process_group()
