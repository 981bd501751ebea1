"""``apex.amp`` on ``torch.autocast`` and an apex-compatible loss scaler (float16, as apex).

``initialize(models, optimizers=None, enabled=True, opt_level="O1", ...)`` takes apex's arguments
and returns ``models`` or ``(models, optimizers)`` in the structure given (single object or list).
Opt levels, with apex's defaults (any keyword overrides them):

========  ===================  =====================  ==============  ==========
level     cast_model_type      patch_torch_functions  master_weights  loss_scale
========  ===================  =====================  ==============  ==========
O0        float32              no                     no              1.0
O1        (unchanged)          yes                    no              "dynamic"
O2        float16, BN fp32     no                     yes             "dynamic"
O3        float16              no                     no              1.0
========  ===================  =====================  ==============  ==========

* ``patch_torch_functions`` -> each model's ``forward`` runs under
  ``torch.autocast(<device>, dtype=torch.float16)``. Difference from apex, which patches torch
  functions process-wide: code outside the models' forward (typically the loss) runs uncast, which
  is what apex's casting lists do for losses anyway.
* ``cast_model_type`` -> the model is cast (BatchNorm kept in float32 with
  ``keep_batchnorm_fp32``), floating inputs of ``forward`` are cast to it and floating outputs to
  ``cast_model_outputs`` (default float32), as apex does.
* ``master_weights`` -> the optimizer steps float32 master copies of the float16 parameters; after
  each step the masters are copied back into the model (apex's O2).
* ``with amp.scale_loss(loss, optimizer) as scaled: scaled.backward()`` multiplies by the loss scale,
  then unscales the new gradients (adding them to gradients accumulated before, as apex's stashing
  does), checks them for inf/NaN and, with dynamic scaling, halves the scale and makes the next
  ``optimizer.step()`` a no-op on overflow, or doubles it after 2000 clean steps (apex's
  ``LossScaler``: initial 2**16, capped by ``max_loss_scale``, floored by ``min_loss_scale``).
  ``delay_unscale=True`` leaves the gradients scaled (apex semantics).
* ``state_dict()`` / ``load_state_dict()`` hold ``{"loss_scaler<i>": {"loss_scale", "unskipped"}}``.
* ``master_params(optimizer)``, ``disable_casts()``, ``register_{half,float,promote}_function`` and
  the ``{half,float,promote}_function`` decorators exist; the registrations are no-ops because
  autocast's own op lists decide the casts.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Iterator

import torch

__all__ = [
    "disable_casts",
    "float_function",
    "half_function",
    "initialize",
    "load_state_dict",
    "master_params",
    "promote_function",
    "register_float_function",
    "register_half_function",
    "register_promote_function",
    "scale_loss",
    "state_dict",
]

_OPT_LEVELS = {
    "O0": dict(cast_model_type=torch.float32, patch_torch_functions=False, keep_batchnorm_fp32=None,
               master_weights=False, loss_scale=1.0),
    "O1": dict(cast_model_type=None, patch_torch_functions=True, keep_batchnorm_fp32=None,
               master_weights=None, loss_scale="dynamic"),
    "O2": dict(cast_model_type=torch.float16, patch_torch_functions=False, keep_batchnorm_fp32=True,
               master_weights=True, loss_scale="dynamic"),
    "O3": dict(cast_model_type=torch.float16, patch_torch_functions=False, keep_batchnorm_fp32=False,
               master_weights=False, loss_scale=1.0),
}


class _LossScaler:
    """apex's ``LossScaler``: static or dynamic (x0.5 on overflow, x2 after ``window`` clean steps)."""

    def __init__(self, loss_scale, min_loss_scale=None, max_loss_scale=2.0 ** 24, window=2000):
        self.dynamic = loss_scale == "dynamic"
        self.loss_scale = min(max_loss_scale, 2.0 ** 16) if self.dynamic else float(loss_scale)
        self.min_loss_scale = min_loss_scale
        self.max_loss_scale = max_loss_scale
        self.window = window
        self.unskipped = 0

    def update(self, overflow: bool) -> bool:
        """Record one step; True when the optimizer step must be skipped."""
        skip = False
        if overflow and self.dynamic:
            skip = True
            halved = self.loss_scale / 2.0
            self.loss_scale = max(self.min_loss_scale, halved) if self.min_loss_scale else halved
            self.unskipped = 0
        else:
            self.unskipped += 1
        if self.dynamic and self.unskipped == self.window:
            self.loss_scale = min(self.max_loss_scale, self.loss_scale * 2.0)
            self.unskipped = 0
        return skip


class _State:
    def __init__(self) -> None:
        self.initialized = False
        self.enabled = False
        self.opt_level = None
        self.props: dict = {}
        self.scalers: list = []
        self.device_type = "cpu"
        self.verbosity = 1


_state = _State()


def _as_list(x) -> tuple[list, bool]:
    if isinstance(x, (list, tuple)):
        return list(x), True
    return [x], False


def _cast_floating(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floating(v, dtype) for k, v in value.items()}
    return value


def _is_batchnorm(m: torch.nn.Module) -> bool:
    return isinstance(m, torch.nn.modules.batchnorm._BatchNorm)


def initialize(models, optimizers=None, enabled=True, opt_level="O1", cast_model_type=None,
               patch_torch_functions=None, keep_batchnorm_fp32=None, master_weights=None, loss_scale=None,
               cast_model_outputs=None, num_losses=1, verbosity=1, min_loss_scale=None, max_loss_scale=2.0 ** 24):
    """apex's ``amp.initialize``; see the module docstring. Returns models or (models, optimizers)."""
    model_list, models_is_list = _as_list(models)
    opt_list, opts_is_list = ([], False) if optimizers is None else _as_list(optimizers)
    result = (models if optimizers is None else (models, optimizers))
    _state.__init__()
    _state.verbosity = verbosity
    if not enabled:
        return result
    if opt_level not in _OPT_LEVELS:
        raise RuntimeError(f"Unexpected optimization level {opt_level}. Options are 'O0', 'O1', 'O2', 'O3'. "
                           "Note that in `O0`, `O1`, etc., the prefix O is the letter O, not the number zero.")
    props = dict(_OPT_LEVELS[opt_level])
    overrides = dict(cast_model_type=cast_model_type, patch_torch_functions=patch_torch_functions,
                     keep_batchnorm_fp32=keep_batchnorm_fp32, master_weights=master_weights, loss_scale=loss_scale)
    for key, value in overrides.items():
        if value is not None:
            props[key] = _parse_override(key, value)
    for m in model_list:
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"amp.initialize: models must be torch.nn.Module (or a list of them), got {type(m).__name__}")
    params = [p for m in model_list for p in m.parameters()]
    _state.device_type = params[0].device.type if params else "cpu"
    for opt in opt_list:
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"amp.initialize: optimizers must be torch.optim.Optimizer, got {type(opt).__name__}")
        if opt.state:
            raise RuntimeError("amp.initialize: call it before the optimizer has taken a step (its state is not empty)")

    cast = props["cast_model_type"]
    for m in model_list:
        if cast is not None and cast != torch.float32:
            m.to(cast)
            if props["keep_batchnorm_fp32"]:
                for sub in m.modules():
                    if _is_batchnorm(sub):
                        sub.float()
        elif cast == torch.float32:
            m.float()
        if cast is not None:
            _patch_casting_forward(m, cast, cast_model_outputs or torch.float32)
        if props["patch_torch_functions"]:
            _patch_autocast_forward(m, _state.device_type)
    for opt in opt_list:
        _patch_optimizer(opt, bool(props["master_weights"]) and cast not in (None, torch.float32))
    _state.scalers = [_LossScaler(props["loss_scale"], min_loss_scale, max_loss_scale) for _ in range(num_losses)]
    _state.props = props
    _state.opt_level = opt_level
    _state.enabled = True
    _state.initialized = True
    return result


def _parse_override(key: str, value):
    if key == "cast_model_type" and isinstance(value, str):
        return {"torch.float16": torch.float16, "torch.float32": torch.float32}[value]
    if key == "loss_scale" and value != "dynamic":
        return float(value)
    if key in ("keep_batchnorm_fp32",) and isinstance(value, str):
        return value == "True"
    return value


def _patch_casting_forward(model: torch.nn.Module, in_dtype, out_dtype) -> None:
    old = model.forward

    @functools.wraps(old)
    def forward(*args, **kwargs):
        out = old(*_cast_floating(args, in_dtype), **_cast_floating(kwargs, in_dtype))
        return _cast_floating(out, out_dtype)

    model.forward = forward


def _patch_autocast_forward(model: torch.nn.Module, device_type: str) -> None:
    old = model.forward

    @functools.wraps(old)
    def forward(*args, **kwargs):
        with torch.autocast(device_type, dtype=torch.float16):
            return old(*args, **kwargs)

    model.forward = forward


def _patch_optimizer(opt: torch.optim.Optimizer, master_weights: bool) -> None:
    """Add the skip-on-overflow flag, and (O2) float32 master copies of the float16 params."""
    pairs = []
    if master_weights:
        for group in opt.param_groups:
            masters = []
            for p in group["params"]:
                if p.dtype == torch.float16:
                    master = p.detach().clone().float().requires_grad_(True)
                    pairs.append((p, master))
                    masters.append(master)
                else:
                    masters.append(p)
            group["params"] = masters
    opt._amp_pairs = pairs
    opt._amp_skip = False
    step, zero_grad = opt.step, opt.zero_grad

    @functools.wraps(step)
    def amp_step(*args, **kwargs):
        if opt._amp_skip:
            opt._amp_skip = False
            return None
        out = step(*args, **kwargs)
        with torch.no_grad():
            for model_p, master in opt._amp_pairs:
                model_p.copy_(master)
        return out

    @functools.wraps(zero_grad)
    def amp_zero_grad(set_to_none: bool = True):
        zero_grad(set_to_none)
        for model_p, _ in opt._amp_pairs:
            model_p.grad = None

    opt.step = amp_step
    opt.zero_grad = amp_zero_grad


def _grad_slots(opt) -> list:
    """(holder, source) pairs: the tensor that keeps the unscaled grad and the one backward writes to."""
    masters = {id(m): p for p, m in getattr(opt, "_amp_pairs", [])}
    out = []
    for group in opt.param_groups:
        for p in group["params"]:
            out.append((p, masters.get(id(p), p)))
    return out


@contextlib.contextmanager
def scale_loss(loss, optimizers, loss_id=0, model=None, delay_unscale=False, delay_overflow_check=False):
    """apex's ``amp.scale_loss``: yields ``loss * loss_scale``; unscales/checks on exit (module docstring)."""
    if not _state.initialized or not _state.enabled:
        yield loss
        return
    if loss_id >= len(_state.scalers):
        raise RuntimeError(f"amp.scale_loss: loss_id {loss_id} but amp.initialize(num_losses={len(_state.scalers)})")
    scaler = _state.scalers[loss_id]
    opts, _ = _as_list(optimizers)
    slots = [s for opt in opts for s in _grad_slots(opt)]
    stash = {}
    if not delay_unscale:
        for holder, source in slots:
            stash[id(holder)] = holder.grad
            holder.grad = None
            if source is not holder:
                source.grad = None
    yield loss.float() * scaler.loss_scale
    if delay_unscale:
        return
    inv = 1.0 / scaler.loss_scale
    finite = True
    with torch.no_grad():
        for holder, source in slots:
            new = source.grad
            if new is not None:
                new = new.float() * inv if source is not holder else new.mul_(inv)
                if holder.dtype != new.dtype:
                    new = new.to(holder.dtype)
                if scaler.dynamic and not bool(torch.isfinite(new).all()):
                    finite = False
            old = stash.get(id(holder))
            if old is not None:
                new = old if new is None else old.add_(new)
            holder.grad = new
            if source is not holder:
                source.grad = None
    if scaler.update(not finite):
        for opt in opts:
            opt._amp_skip = True
        if _state.verbosity:
            print(f"Gradient overflow.  Skipping step, loss scaler {loss_id} reducing loss scale to "
                  f"{scaler.loss_scale}")


def master_params(optimizer) -> Iterator[torch.Tensor]:
    """The parameters the optimizer steps (float32 masters under O2)."""
    for group in optimizer.param_groups:
        yield from group["params"]


def state_dict(destination=None) -> dict:
    """``{"loss_scaler<i>": {"loss_scale": float, "unskipped": int}}``, as apex."""
    out = {} if destination is None else destination
    for i, s in enumerate(_state.scalers):
        out[f"loss_scaler{i}"] = {"loss_scale": s.loss_scale, "unskipped": s.unskipped}
    return out


def load_state_dict(state_dict: dict) -> None:
    """Restore loss scales saved by :func:`state_dict` (apex's error on a count mismatch)."""
    if len(state_dict) != len(_state.scalers):
        print(f"Warning: state_dict contains {len(state_dict)} entries, while {len(_state.scalers)} loss_scalers "
              "are used")
    for i, s in enumerate(_state.scalers):
        entry = state_dict.get(f"loss_scaler{i}")
        if entry is not None:
            s.loss_scale = float(entry["loss_scale"])
            s.unskipped = int(entry["unskipped"])


@contextlib.contextmanager
def disable_casts():
    """Run the block without autocast (apex's ``amp.disable_casts``)."""
    with torch.autocast(_state.device_type, enabled=False):
        yield


def _no_op_register(module: Any, name: str) -> None:
    if not hasattr(module, name):
        raise ValueError(f"No function named {name} in module {module}.")


register_half_function = register_float_function = register_promote_function = _no_op_register


def half_function(fn):
    return fn


float_function = promote_function = half_function
