"""A training script shaped like minGPT's and nanoGPT's trainers: set-up work, an evaluation with
sampling every few iterations, a checkpoint, then the training step. Markers name what each phase's
report must hold: PLANT (training steps, the default), EVAL, CKPT, SETUP (with --phases all)."""
import io

import torch
import torch.nn as nn

device = "cuda"
torch.manual_seed(0)


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        return self.head(torch.tanh(self.emb(idx)))                     # PLANT fp32-matmul EVAL fp32-matmul

    @torch.no_grad()
    def generate(self, idx, n):
        for _ in range(n):
            logits = self(idx)[:, -1, :]
            nxt = torch.multinomial(torch.softmax(logits, -1), 1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


model = TinyLM().to(device)
vocab_mean = torch.arange(32, device=device).float().mean().item()      # SETUP device-sync
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
data = torch.randint(0, 32, (64, 9), device=device)


def evaluate():
    model.eval()
    losses = []
    with torch.no_grad():
        for i in range(2):
            x, y = data[i * 8:(i + 1) * 8, :-1], data[i * 8:(i + 1) * 8, 1:]
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
            losses.append(loss.item())                                  # EVAL device-sync
    model.train()
    return sum(losses) / len(losses)


for it in range(7):
    if it % 3 == 0:
        evaluate()
        model.generate(data[:1, :1], 4)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, io.BytesIO())  # CKPT device-sync
    x, y = data[it * 8:(it + 1) * 8, :-1], data[it * 8:(it + 1) * 8, 1:]
    weights = torch.tensor([1.0, 0.5], device=device)                   # PLANT tensor-from-python
    logits = model(x)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()) * weights[0]
    loss.backward()
    opt.step()                                                          # PLANT fused-optimizer
    opt.zero_grad(set_to_none=True)
    print(f"iter {it} loss {loss.item():.3f}")                          # PLANT device-sync
