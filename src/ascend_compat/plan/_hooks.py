"""The global hooks a plan sets while the script runs: what tensors turn out to be, and when a step ends.

* module forward pre-hooks: the module's parameters and buffers are ``parameters``;
* optimizer step pre-hooks: parameters again, their ``.grad`` are ``gradients``; post-hooks: the
  optimizer's state tensors are ``optimizer state``, the step counter advances (progress on stderr) and
  after ``steps`` steps the run stops;
* saved-tensor hooks: tensors autograd saves in the forward are ``activations`` (unless already known);
* ``UntypedStorage.resize_``: the recorder frees and re-allocates the storage's block (FSDP2).
"""
from __future__ import annotations

import contextlib
import sys

import torch


def _mark_module(rec, module) -> None:
    for p in module.parameters(recurse=False):
        rec.mark(p, "parameters")
    for b in module.buffers(recurse=False):
        rec.mark(b, "parameters")


@contextlib.contextmanager
def installed(rec, steps: int, stop, progress: bool):
    from torch.nn.modules.module import register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    def forward_pre(module, args):
        _mark_module(rec, module)

    def step_pre(opt, args, kwargs):
        rec.phase_override = "optimizer"
        for group in opt.param_groups:
            for p in group["params"]:
                rec.mark(p, "parameters")
                if p.grad is not None:
                    rec.mark(p.grad, "gradients", overwrite=True)

    def step_post(opt, args, kwargs):
        for state in opt.state.values():
            for v in state.values():
                if isinstance(v, torch.Tensor):
                    rec.mark(v, "optimizer state", overwrite=True)
        rec.phase_override = None
        rec.step += 1
        rec.step_marks.append((rec.step, len(rec.events), len(rec.ops)))
        if progress:
            print(f"plan: step {rec.step}/{steps}: {len(rec.ops)} ops, peak "
                  f"{rec.peak_allocated / 2**30:.2f} GiB allocated", file=sys.__stdout__, flush=True)
        if rec.step >= steps:
            raise stop()

    def pack(t):
        if isinstance(t, torch.Tensor) and t.device.type == "npu":
            a = rec.track(t, "<saved>")
            if a is not None and a.category is None and rec.phase() == "forward":
                a.category = "activations"
        return t

    resize = torch.UntypedStorage.resize_

    def resize_(self, size):
        old = self.nbytes()
        out = resize(self, size)
        rec.resized(self, old, int(size))  # a FakeTensor's storage reports "meta": the recorder knows its own
        return out

    apply = torch.nn.Module._apply

    def _apply(module, fn, *args, **kwargs):  # .to()/.cuda()/to_empty(): what a module holds are parameters
        out = apply(module, fn, *args, **kwargs)
        _mark_module(rec, module)
        return out

    torch.nn.Module._apply = _apply
    handles = [register_module_forward_pre_hook(forward_pre), register_optimizer_step_pre_hook(step_pre),
               register_optimizer_step_post_hook(step_post)]
    torch.UntypedStorage.resize_ = resize_
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield
    finally:
        torch.nn.Module._apply = apply
        torch.UntypedStorage.resize_ = resize
        for h in handles:
            h.remove()
