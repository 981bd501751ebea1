"""LSTM language model in the style of pytorch/examples word_language_model (written for the suite).

CUDA idioms: ``torch.device("cuda" if args.cuda else "cpu")``, ``batchify(...).to(device)``,
``repackage_hidden``, ``clip_grad_norm_``, ``torch.cuda.manual_seed``, ``torch.save``/``torch.load``
of the best model with ``map_location``. Synthetic corpus, no downloads.
"""
import argparse
import math
import os
import tempfile

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--cuda", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--bptt", type=int, default=12)
args = parser.parse_args()
torch.manual_seed(1111)
if torch.cuda.is_available():
    if not args.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")
    else:
        torch.cuda.manual_seed(1111)
device = torch.device("cuda" if args.cuda else "cpu")

words = ("the quick brown fox jumps over the lazy dog and the dog sleeps " * 40).split()
vocab = {w: i for i, w in enumerate(sorted(set(words)))}
ids = torch.tensor([vocab[w] for w in words], dtype=torch.long)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


train_data = batchify(ids, 4)
model = RNNModel(len(vocab), 16, 32, 2).to(device)
criterion = nn.NLLLoss()
lr = 5.0


def evaluate(data_source):
    model.eval()
    total_loss, hidden = 0.0, model.init_hidden(4)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


save = os.path.join(tempfile.mkdtemp(), "model_cuda.pt")
best = None
for epoch in range(1, args.epochs + 1):
    model.train()
    hidden = model.init_hidden(4)
    for i in range(0, train_data.size(0) - 1, args.bptt):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    val_loss = evaluate(train_data)
    print(f"| epoch {epoch} | valid loss {val_loss:.2f} | ppl {math.exp(val_loss):.2f}")
    if best is None or val_loss < best:
        with open(save, "wb") as f:
            torch.save(model.state_dict(), f)
        best = val_loss

state = torch.load(save, map_location="cuda" if args.cuda else "cpu")
model.load_state_dict(state)
print(f"RESULT device={next(model.parameters()).device} loaded={next(iter(state.values())).device} best={best:.3f}")
