"""npu tensors are plain torch.Tensor objects with real storage."""
from __future__ import annotations

import io

import pytest
import torch


def test_device_and_type():
    d = torch.device("npu:0")
    x = torch.ones(3, device=d)
    assert type(x) is torch.Tensor
    assert x.device == d and x.is_npu and not torch.ones(1).is_npu
    assert x.data_ptr() != 0 and x.untyped_storage().nbytes() == 12


def test_to_npu_and_back():
    c = torch.arange(6.0).reshape(2, 3)
    for n in (c.to("npu"), c.npu(), c.to(torch.device("npu", 0)), c.to("npu:0", non_blocking=True)):
        assert n.device.type == "npu" and torch.equal(n.cpu(), c)
    assert c.npu().data_ptr() != c.data_ptr()  # a copy, like a real device


def test_module_npu():
    m = torch.nn.Linear(3, 2).npu()
    assert all(p.device.type == "npu" for p in m.parameters())
    assert m(torch.ones(1, 3, device="npu")).device.type == "npu"


def test_printing():
    x = torch.tensor([1.5, 2.0], device="npu")
    assert repr(x) == "tensor([1.5000, 2.0000], device='npu:0')"
    assert "device='npu:0'" in repr(torch.zeros(2, dtype=torch.int64, device="npu"))
    assert "grad_fn" in repr(x.requires_grad_() * 2)


def test_item_tolist_numpy():
    x = torch.tensor([[1, 2], [3, 4]], device="npu")
    assert x.sum().item() == 10 and x.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        x.numpy()  # as on any device: numpy needs a host tensor


def test_views_share_storage():
    x = torch.zeros(4, 4, device="npu")
    v = x[1]
    t = x.t()
    v.fill_(7)
    assert x.untyped_storage().data_ptr() == v.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert x[1].tolist() == [7.0] * 4 and t[:, 1].tolist() == [7.0] * 4
    assert v._base is x


def _roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kw)


@pytest.mark.parametrize("map_location,expected", [(None, "npu:0"), ("cpu", "cpu"), ("npu", "npu:0"),
                                                   (torch.device("npu:0"), "npu:0"), ("npu:0", "npu:0")])
def test_save_load_map_location(map_location, expected):
    x = torch.randn(3, 2, device="npu")
    kw = {} if map_location is None else {"map_location": map_location}
    y = _roundtrip({"x": x}, **kw)["x"]
    assert str(y.device) == expected and torch.equal(y.cpu(), x.cpu())


def test_cpu_checkpoint_onto_npu():
    m = torch.nn.Linear(4, 3)
    sd = _roundtrip(m.state_dict(), map_location="npu")
    assert all(v.device.type == "npu" for v in sd.values())
    m2 = torch.nn.Linear(4, 3).npu()
    m2.load_state_dict(sd)
    assert torch.equal(m2.weight.cpu(), m.weight)


def test_load_state_dict_round_trip():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).npu()
    m(torch.randn(8, 4, device="npu"))  # updates running stats
    sd = _roundtrip(m.state_dict())
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)).npu()
    m2.load_state_dict(sd)
    for (k, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert a.device == b.device and torch.equal(a.cpu(), b.cpu()), k
    cpu = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    cpu.load_state_dict(m.state_dict())  # npu -> cpu copies
    assert torch.equal(cpu[1].running_mean, m[1].running_mean.cpu())


class _TiedLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight


def test_module_to_keeps_tied_weights_and_parameter_objects():
    m = _TiedLM()
    params = {n: p for n, p in m.named_parameters()}
    m.to("npu")
    assert m.head.weight is m.emb.weight
    assert all(p is params[n] for n, p in m.named_parameters())
    assert m.emb.weight.device.type == "npu"
    # training updates the one shared tensor
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    out = m.head(m.emb(torch.tensor([1, 2], device="npu")))
    out.sum().backward()
    opt.step()
    assert m.head.weight is m.emb.weight
    assert torch._has_compatible_shallow_copy_type(torch.ones(1), torch.ones(1, device="npu"))


def test_record_stream():
    x = torch.ones(3, device="npu")
    stream = torch.npu.current_stream() if hasattr(torch.npu, "current_stream") else torch.Stream(device="npu")
    assert isinstance(stream, torch.Stream)
    x.record_stream(stream)  # must not raise


def test_generator_npu():
    g = torch.Generator("npu")
    assert isinstance(g, torch.Generator) and isinstance(torch.default_generator, torch.Generator)
    assert g.device == torch.device("npu:0")
    g.manual_seed(3)
    a = torch.randn(4, device="npu", generator=g)
    g.manual_seed(3)
    b = torch.randn(4, device="npu", generator=g)
    assert torch.equal(a.cpu(), b.cpu())
    assert torch.Generator().device.type == "cpu"


def test_zero_size_and_dtypes():
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
                  torch.int32, torch.int64, torch.bool, torch.complex64, torch.uint16, torch.uint32,
                  torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2):
        x = torch.zeros(2, 3, dtype=dtype, device="npu")
        assert x.dtype == dtype and torch.equal(x.cpu(), torch.zeros(2, 3, dtype=dtype))
    e = torch.empty(0, 5, device="npu")
    assert e.shape == (0, 5) and e.sum().item() == 0


def test_channels_last_and_non_contiguous():
    c = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    n = c.npu()
    assert n.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(n.cpu(), c)
    t = torch.randn(5, 7)[:, ::2]
    assert torch.equal(t.npu().cpu(), t)


def test_conjugate_and_negative_views():
    c = torch.complex(torch.arange(3.0), torch.ones(3))
    n = c.npu()
    assert n.conj().is_conj()
    assert torch.equal((n.conj() * 2).cpu(), c.conj() * 2)
    assert torch.equal(n.conj().resolve_conj().cpu(), c.conj().resolve_conj())
    assert torch.equal(n.conj().imag.cpu(), c.conj().imag)
    assert "device='npu:0'" in repr(n.conj())
    assert torch.equal(torch._neg_view(n).cpu(), -c)
