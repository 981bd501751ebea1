"""Training equivalence: the same model, data and seed give the same losses on npu as on CPU."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import nn


class _Seq(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(rnn.hidden_size * (2 if rnn.bidirectional else 1), 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class _Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 20)
        self.head.weight = self.emb.weight  # tied, as in GPT-style models

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        return self.head(self.enc(self.emb(x), mask=mask, is_causal=True))


def _mlp():
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, 3))


CASES = {
    "mlp_adamw": (_mlp, lambda: torch.randn(16, 8), lambda: torch.randint(0, 3, (16,)), "adamw"),
    "cnn_batchnorm_sgd": (_cnn, lambda: torch.randn(8, 3, 10, 10), lambda: torch.randint(0, 3, (8,)), "sgd"),
    "lstm": (lambda: _Seq(nn.LSTM(6, 12, num_layers=2, batch_first=True)), lambda: torch.randn(4, 7, 6),
             lambda: torch.randint(0, 3, (4,)), "adamw"),
    "gru": (lambda: _Seq(nn.GRU(6, 12, batch_first=True, bidirectional=True)), lambda: torch.randn(4, 7, 6),
            lambda: torch.randint(0, 3, (4,)), "adamw"),
    "transformer_adamw": (_Transformer, lambda: torch.randint(0, 20, (4, 9)), None, "adamw"),
}


def _train(model, x, y, opt_name, device, steps=6):
    model = model.to(device)
    x = x.to(device)
    y = y.to(device) if y is not None else None
    if opt_name == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        if y is None:  # next-token prediction
            loss = nn.functional.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), x[:, 1:].reshape(-1))
        else:
            loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.usefixtures("exact_conv")  # exact comparison: HF32 convolution off
@pytest.mark.parametrize("name", list(CASES))
def test_same_losses_on_npu_and_cpu(name):
    make, make_x, make_y, opt_name = CASES[name]
    torch.manual_seed(0)
    model = make()
    x = make_x()
    y = make_y() if make_y else None
    cpu_losses, cpu_model = _train(copy.deepcopy(model), x, y, opt_name, "cpu")
    npu_losses, npu_model = _train(copy.deepcopy(model), x, y, opt_name, "npu")
    assert all(p.device.type == "npu" for p in npu_model.parameters())
    torch.testing.assert_close(npu_losses, cpu_losses, rtol=1e-5, atol=1e-6)
    assert cpu_losses[-1] < cpu_losses[0]
    for (n, a), b in zip(cpu_model.state_dict().items(), npu_model.state_dict().values()):
        b = b.cpu()
        if n.endswith("in_proj_bias"):
            # softmax is invariant to the key bias: its true gradient is 0 and AdamW turns the
            # rounding noise of either device into lr-sized steps. Compare the query/value parts.
            third = a.shape[0] // 3
            a, b = torch.cat([a[:third], a[2 * third:]]), torch.cat([b[:third], b[2 * third:]])
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=n)
