"""Mixed-device errors worded as torch_npu words them (its own text and ERR01002 for an NPU op given a
CPU tensor); the CPU scalars and index tensors CUDA allows."""
from __future__ import annotations

import pytest
import torch

MSG = ("Expected all tensors to be on the same device. Expected NPU tensor, please check whether the input "
       "tensor device is correct.")


@pytest.mark.parametrize("fn", [
    lambda n, c: n + c,
    lambda n, c: c * n,
    lambda n, c: torch.matmul(n, c),
    lambda n, c: torch.cat([n, c]),
    lambda n, c: torch.where(n > 0, n, c),
    lambda n, c: n.add_(c),
    lambda n, c: torch.nn.functional.linear(n, c),
], ids=["add", "rmul", "matmul", "cat", "where", "add_", "linear"])
def test_npu_and_cpu_tensors_raise(fn):
    n = torch.ones(2, 2, device="npu")
    c = torch.ones(2, 2)
    with pytest.raises(RuntimeError) as exc:
        fn(n, c)
    assert MSG in str(exc.value) and "ERR01002 OPS invalid type" in str(exc.value)


def test_cpu_scalars_and_index_tensors_are_allowed():
    n = torch.arange(6.0, device="npu")
    assert (n * torch.tensor(2.0)).device.type == "npu"
    idx = torch.tensor([0, 5])
    assert n[idx].tolist() == [0.0, 5.0]
    n[idx] = torch.tensor(9.0, device="npu")
    assert n.tolist() == [9.0, 1.0, 2.0, 3.0, 4.0, 9.0]
    n.index_put_((idx,), torch.tensor([7.0, 8.0], device="npu"))
    assert n[0].item() == 7.0


def test_copy_between_devices_is_not_an_error():
    n = torch.zeros(3, device="npu")
    n.copy_(torch.arange(3.0))
    assert n.tolist() == [0.0, 1.0, 2.0]
    c = torch.empty(3)
    c.copy_(n)
    assert c.tolist() == [0.0, 1.0, 2.0]


def test_packed_sequences_take_their_lengths_on_the_cpu():
    """pack_padded_sequence wants CPU lengths and keeps batch_sizes on the CPU (on CUDA and torch_npu):
    a packed LSTM trains on the NPU and matches the CPU."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(0)
    x, lengths = torch.randn(3, 5, 4), torch.tensor([5, 3, 2])
    lstm = torch.nn.LSTM(4, 6, batch_first=True)
    ref, _ = pad_packed_sequence(lstm(pack_padded_sequence(x, lengths, batch_first=True))[0], batch_first=True)
    lstm.to("npu")
    packed = pack_padded_sequence(x.to("npu"), lengths, batch_first=True)
    assert packed.data.device.type == "npu" and packed.batch_sizes.device.type == "cpu"
    out, out_lengths = pad_packed_sequence(lstm(packed)[0], batch_first=True)
    out.sum().backward()
    assert out.device.type == "npu" and out_lengths.tolist() == [5, 3, 2]
    torch.testing.assert_close(out.cpu(), ref.detach(), atol=1e-6, rtol=1e-5)
    assert lstm.weight_ih_l0.grad.device.type == "npu"
