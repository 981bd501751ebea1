"""PhaseTracker: training steps, evaluation, checkpointing and set-up told apart by what the script
does, on the ops of an ordinary loop (CPU tensors: phases need no device)."""
from __future__ import annotations

import io

import pytest
import torch

from ascend_compat.observe.observer import OpCall, OpObserver
from ascend_compat.observe.phases import PhaseTracker


class Phases(OpObserver):
    """Keeps ``(label, phase)`` for every op run while a label is set."""

    def __init__(self, start="setup"):
        super().__init__(phases=start)
        self.label = ""
        self.seen = []

    def on_op(self, call: OpCall):
        if self.label:
            self.seen.append((self.label, self.phase()))
        return call.run()

    def phases_of(self, label):
        return {phase for lab, phase in self.seen if lab == label}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.frozen = torch.nn.Embedding(10, 4)  # kept in eval mode inside a training model
        self.lin = torch.nn.Linear(4, 10)

    def forward(self, tokens):
        return self.lin(self.frozen(tokens))

    @torch.no_grad()
    def generate(self, tokens):
        logits = self(tokens)
        return torch.topk(torch.softmax(logits, -1), 2).indices


def test_an_ordinary_script_is_split_into_its_phases():
    torch.manual_seed(0)
    obs = Phases()
    with obs:
        obs.label = "build"
        model = Net()
        model.frozen.eval()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)
        x = torch.randint(0, 10, (3,))
        for step in range(2):
            obs.label = "batch"
            y = torch.randint(0, 10, (3,))
            obs.label = "forward"
            logits = model(x)
            obs.label = "loss"
            loss = torch.nn.functional.cross_entropy(logits, y)
            obs.label = "backward"
            loss.backward()
            obs.label = "clip"
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            obs.label = "step"
            opt.step()
            opt.zero_grad()
            obs.label = "manual no_grad update"
            with torch.no_grad():
                model.lin.bias.mul_(0.99)
            obs.label = "log"
            loss.item()
        model.eval()
        obs.label = "eval prepare"
        torch.ones(3) * 2  # before the evaluation's first forward
        obs.label = "eval forward"
        with torch.no_grad():
            val = model(x)
            obs.label = "eval metric"
            val.argmax(-1).eq(y).float().mean().item()
        obs.label = "generate"
        model.generate(x)
        obs.label = "save"
        torch.save(model.state_dict(), io.BytesIO())
        model.train()
        obs.label = "train again"
        model(x).sum().backward()
    expected = {
        "build": {"setup"}, "batch": {"setup", "train"}, "forward": {"train"}, "loss": {"train"},
        "backward": {"train"}, "clip": {"train"}, "step": {"train"}, "manual no_grad update": {"train"},
        "log": {"train"}, "eval prepare": {"eval"}, "eval forward": {"eval"}, "eval metric": {"eval"}, "generate": {"eval"},
        "save": {"checkpoint"}, "train again": {"train"},
    }
    assert {label: obs.phases_of(label) for label in expected} == expected


def test_a_loop_wrapped_alone_starts_in_training_and_hooks_are_removed():
    from torch.nn.modules import module as nn_module

    hooks_before = len(nn_module._global_forward_pre_hooks)
    save = torch.save
    obs = Phases(start="train")
    with obs:
        obs.label = "loose"
        torch.ones(2) * 2
        assert torch.save is not save  # wrapped while observing
    assert obs.phases_of("loose") == {"train"}
    assert torch.save is save and len(nn_module._global_forward_pre_hooks) == hooks_before


def test_start_must_be_a_phase():
    with pytest.raises(ValueError, match="start must be one of"):
        PhaseTracker("warmup")
