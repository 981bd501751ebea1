"""What ``import bitsandbytes`` gives under ascend-compat when bitsandbytes is not installed.

What works on Ascend (researched Nov 2026): bitsandbytes' own Ascend backend covers **NF4 4-bit
quantize/dequantize** (QLoRA-style ``Linear4bit`` loading through transformers/peft): the
multi-backend builds (bitsandbytes 0.45.x; ``pip install bitsandbytes-npu-beta``) and the NPU
custom-op work upstream (bitsandbytes PRs #1422, #1442, #1695). **8-bit optimizers, LLM.int8()
(``Linear8bitLt``) and FP4 have no NPU kernels.** If a bitsandbytes build is installed, it is used
as is and this module is not involved.

Decision for a script that imports bitsandbytes without it being installed:

* ``bitsandbytes.optim.*`` optimizers (``Adam8bit``, ``AdamW8bit``, ``PagedAdamW8bit``,
  ``PagedAdamW``, ``SGD8bit``, ``RMSprop8bit``, ``Adagrad8bit`` and their 32-bit/paged
  variants) construct the matching **torch optimizer with full-precision state** (same update
  rule; the 8-bit variants quantize the state, which changes results only by quantization error)
  and warn once: optimizer state then takes 8 bytes per parameter instead of 2.
  ``percentile_clipping < 100`` and Lion variants raise (no torch equivalent).
* Quantized layers and functions (``bitsandbytes.nn.Linear8bitLt``, ``Linear4bit``,
  ``LinearNF4``, ``Params4bit``, ``Int8Params``, ``Embedding8bit``, ``StableEmbedding``,
  ``bitsandbytes.functional.quantize_4bit`` ...) import, and raise ``NotImplementedError`` when
  used, naming what works on Ascend and the alternatives.
* No package metadata is provided, so transformers/peft keep reporting bitsandbytes as not
  installed and their quantization paths give their own install hint.

Emulated API era: bitsandbytes 0.45 (``bitsandbytes.optim`` / ``nn`` / ``functional`` names).
"""
from __future__ import annotations

import warnings

import torch

_WORKS = ("On Ascend, bitsandbytes supports NF4 4-bit quantization only (bitsandbytes' Ascend backend, e.g. "
          "`pip install bitsandbytes-npu-beta`); 8-bit optimizers, LLM.int8() and FP4 have no NPU kernels.")
_warned: set = set()


def _warn_once(name: str, torch_name: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"bitsandbytes.optim.{name} on Ascend (ascend-compat): bitsandbytes is not installed and its 8-bit optimizer "
        f"kernels have no NPU build, so this is {torch_name} with full-precision optimizer state (about 8 bytes per "
        f"parameter instead of 2). Same update rule; use {torch_name} directly to silence this warning.",
        UserWarning, stacklevel=3)


def _optimizer(name: str, base: type, defaults: dict, torch_name: str) -> type:
    keep = set(defaults)

    def __init__(self, params, *args, **kwargs):
        for pos, key in zip(args, defaults):
            kwargs.setdefault(key, pos)
        clip = kwargs.pop("percentile_clipping", 100)
        if clip != 100:
            raise NotImplementedError(f"bitsandbytes.optim.{name}(percentile_clipping={clip}) has no torch equivalent "
                                      "on Ascend; clip gradients with torch.nn.utils.clip_grad_norm_ instead.")
        for ignored in ("optim_bits", "args", "min_8bit_size", "block_wise", "is_paged", "max_unorm",
                        "skip_zeros", "alpha", "t_alpha", "t_beta3", "lr_decay", "initial_accumulator_value"):
            if ignored not in keep:
                kwargs.pop(ignored, None)
        _warn_once(name, torch_name)
        base.__init__(self, params, **{k: kwargs.get(k, v) for k, v in defaults.items()})

    return type(name, (base,), {"__init__": __init__, "__doc__": f"bitsandbytes.optim.{name} -> {torch_name}.",
                                "__module__": __name__})


_ADAM = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False)
_ADAMW = dict(_ADAM, weight_decay=1e-2)
_SGD = dict(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
_RMS = dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False)
_ADAGRAD = dict(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10)


class optim:  # noqa: N801 - mirrors the ``bitsandbytes.optim`` namespace
    """``bitsandbytes.optim``: optimizers mapped to torch (see the module docstring)."""

    Adam = _optimizer("Adam", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    Adam8bit = _optimizer("Adam8bit", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    Adam32bit = _optimizer("Adam32bit", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    PagedAdam = _optimizer("PagedAdam", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    PagedAdam8bit = _optimizer("PagedAdam8bit", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    PagedAdam32bit = _optimizer("PagedAdam32bit", torch.optim.Adam, _ADAM, "torch.optim.Adam")
    AdamW = _optimizer("AdamW", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    AdamW8bit = _optimizer("AdamW8bit", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    AdamW32bit = _optimizer("AdamW32bit", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    PagedAdamW = _optimizer("PagedAdamW", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    PagedAdamW8bit = _optimizer("PagedAdamW8bit", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    PagedAdamW32bit = _optimizer("PagedAdamW32bit", torch.optim.AdamW, _ADAMW, "torch.optim.AdamW")
    SGD = _optimizer("SGD", torch.optim.SGD, _SGD, "torch.optim.SGD")
    SGD8bit = _optimizer("SGD8bit", torch.optim.SGD, _SGD, "torch.optim.SGD")
    SGD32bit = _optimizer("SGD32bit", torch.optim.SGD, _SGD, "torch.optim.SGD")
    RMSprop = _optimizer("RMSprop", torch.optim.RMSprop, _RMS, "torch.optim.RMSprop")
    RMSprop8bit = _optimizer("RMSprop8bit", torch.optim.RMSprop, _RMS, "torch.optim.RMSprop")
    RMSprop32bit = _optimizer("RMSprop32bit", torch.optim.RMSprop, _RMS, "torch.optim.RMSprop")
    Adagrad = _optimizer("Adagrad", torch.optim.Adagrad, _ADAGRAD, "torch.optim.Adagrad")
    Adagrad8bit = _optimizer("Adagrad8bit", torch.optim.Adagrad, _ADAGRAD, "torch.optim.Adagrad")
    Adagrad32bit = _optimizer("Adagrad32bit", torch.optim.Adagrad, _ADAGRAD, "torch.optim.Adagrad")


def _refusal(qualname: str, alternative: str) -> NotImplementedError:
    return NotImplementedError(f"{qualname} is not available on Ascend under ascend-compat: bitsandbytes is not "
                               f"installed here. {_WORKS} Alternative: {alternative}")


def _unavailable_module(name: str, alternative: str) -> type:
    def __init__(self, *args, **kwargs):
        raise _refusal(f"bitsandbytes.nn.{name}", alternative)

    return type(name, (torch.nn.Module,), {"__init__": __init__, "__module__": __name__,
                                           "__doc__": f"bitsandbytes.nn.{name}: raises on Ascend ({alternative})."})


def _unavailable_function(name: str, alternative: str):
    def fn(*args, **kwargs):
        raise _refusal(f"bitsandbytes.functional.{name}", alternative)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"bitsandbytes.functional.{name}: raises on Ascend ({alternative})."
    return fn


_LINEAR_ALT = ("keep the layer in bfloat16/float16 (torch.nn.Linear), or for inference use torch_npu's quantized "
               "matmuls (torch_npu.npu_weight_quant_batchmatmul / npu_quant_matmul).")
_QUANT_ALT = "install bitsandbytes' Ascend build for NF4, or keep weights in bfloat16/float16."


class nn:  # noqa: N801 - mirrors ``bitsandbytes.nn``
    """``bitsandbytes.nn``: quantized layers; constructing one raises (see the module docstring)."""

    Linear8bitLt = _unavailable_module("Linear8bitLt", _LINEAR_ALT)
    Linear4bit = _unavailable_module("Linear4bit", _QUANT_ALT)
    LinearNF4 = _unavailable_module("LinearNF4", _QUANT_ALT)
    LinearFP4 = _unavailable_module("LinearFP4", _LINEAR_ALT)
    Params4bit = _unavailable_module("Params4bit", _QUANT_ALT)
    Int8Params = _unavailable_module("Int8Params", _LINEAR_ALT)
    Embedding8bit = _unavailable_module("Embedding8bit", "use torch.nn.Embedding.")
    Embedding4bit = _unavailable_module("Embedding4bit", "use torch.nn.Embedding.")
    StableEmbedding = _unavailable_module("StableEmbedding", "use torch.nn.Embedding followed by torch.nn.LayerNorm.")


class functional:  # noqa: N801 - mirrors ``bitsandbytes.functional``
    """``bitsandbytes.functional``: quantization functions; calling one raises."""

    quantize_4bit = staticmethod(_unavailable_function("quantize_4bit", _QUANT_ALT))
    dequantize_4bit = staticmethod(_unavailable_function("dequantize_4bit", _QUANT_ALT))
    quantize_nf4 = staticmethod(_unavailable_function("quantize_nf4", _QUANT_ALT))
    dequantize_nf4 = staticmethod(_unavailable_function("dequantize_nf4", _QUANT_ALT))
    quantize_blockwise = staticmethod(_unavailable_function("quantize_blockwise", _LINEAR_ALT))
    dequantize_blockwise = staticmethod(_unavailable_function("dequantize_blockwise", _LINEAR_ALT))
    int8_vectorwise_quant = staticmethod(_unavailable_function("int8_vectorwise_quant", _LINEAR_ALT))


def matmul(*args, **kwargs):
    """``bitsandbytes.matmul`` (LLM.int8()): raises on Ascend."""
    raise _refusal("bitsandbytes.matmul", _LINEAR_ALT)


def matmul_4bit(*args, **kwargs):
    """``bitsandbytes.matmul_4bit``: raises on Ascend."""
    raise _refusal("bitsandbytes.matmul_4bit", _QUANT_ALT)


__version__ = "0.45.0+ascend-compat.unavailable"
__all__ = ["functional", "matmul", "matmul_4bit", "nn", "optim"]
