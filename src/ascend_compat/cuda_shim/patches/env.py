"""Environment translation, applied before the NPU backend initialises.

* ``CUDA_VISIBLE_DEVICES`` -> ``ASCEND_RT_VISIBLE_DEVICES``: read as CUDA reads it (``-1`` or an
  invalid id hides the devices from there on, a repeated id hides all, GPU UUIDs match no NPU) and
  sorted ascending, as torch_npu requires (it reports zero devices otherwise); the one parser is
  :mod:`ascend_compat.knowledge.visible_devices`. A warning says when the NPUs shown differ from
  what the value asks for on CUDA (reordered ids, a repeated id, UUIDs).
* ``PYTORCH_CUDA_ALLOC_CONF`` -> ``PYTORCH_NPU_ALLOC_CONF`` (keys the NPU allocator does not know
  are dropped, with a warning).
* ``NCCL_*`` -> ``HCCL_*`` where a counterpart exists (:mod:`..mapping.env_vars`), an INFO log line
  naming the variable where none does.

An Ascend variable that is already set always wins. Everything set here is removed again on revert.
"""
from __future__ import annotations

import os
import warnings

from ascend_compat.cuda_shim.mapping.env_vars import ENV_MAP, NO_EQUIVALENT, NPU_ALLOC_CONF_KEYS
from ascend_compat.cuda_shim.registry import Change, hit, log
from ascend_compat.knowledge import visible_devices

__all__ = ["EnvTranslation", "translate_visible_devices", "translate_alloc_conf"]


def translate_visible_devices(value: str) -> visible_devices.Translation:
    """``CUDA_VISIBLE_DEVICES`` -> ``(ASCEND_RT_VISIBLE_DEVICES value, note or None)``, showing the NPUs CUDA
    would show (:func:`ascend_compat.knowledge.visible_devices.to_ascend`: ``"3,1"`` -> ``"1,3"``, ``"-1"``
    -> ``""``)."""
    return visible_devices.to_ascend(value)


def translate_alloc_conf(value: str) -> tuple[str, list[str]]:
    """Keep the ``key:value`` pairs the NPU allocator understands; return (conf, dropped keys)."""
    kept, dropped = [], []
    for part in filter(None, (p.strip() for p in value.split(","))):
        key = part.split(":", 1)[0].strip()
        (kept if key in NPU_ALLOC_CONF_KEYS else dropped).append(part if key in NPU_ALLOC_CONF_KEYS else key)
    return ",".join(kept), dropped


def _bytes_to_mb(value: str) -> str:
    from ascend_compat._config import parse_bytes

    return str(max(1, parse_bytes(value) // (1 << 20)))


class EnvTranslation(Change):
    """Set the Ascend variables derived from CUDA ones; revert removes exactly what it set."""

    name = "environment: CUDA_* / NCCL_* -> ASCEND_* / HCCL_*"
    reason = "torch_npu and HCCL read their own variables"

    def __init__(self, environ: dict | None = None) -> None:
        self._env = os.environ if environ is None else environ
        self.set: dict[str, str] = {}
        self.moved: dict[str, str] = {}  # variables taken out of the environment (restored by revert)
        self.notes: list[str] = []

    def apply(self) -> bool:
        env = self._env
        for cuda_name, (npu_name, conv) in ENV_MAP.items():
            if cuda_name not in env or npu_name in env or npu_name in self.set:
                continue
            value = env[cuda_name]
            try:
                if conv == "visible_devices":
                    value, note = translate_visible_devices(value)
                    if note:
                        self._note(note)
                elif conv == "alloc_conf":
                    value, dropped = translate_alloc_conf(value)
                    if dropped:
                        self._note(f"{cuda_name}: {', '.join(dropped)} not supported by the NPU allocator; ignored")
                    if not value:
                        continue
                elif conv == "bytes_to_mb":
                    value = _bytes_to_mb(value)
            except ValueError as exc:
                self._note(str(exc))
                continue
            env[npu_name] = value
            self.set[npu_name] = value
            if cuda_name == "PYTORCH_ALLOC_CONF":
                # torch_npu 2.10+ reads PYTORCH_ALLOC_CONF too and refuses it next to PYTORCH_NPU_ALLOC_CONF
                self.moved[cuda_name] = env.pop(cuda_name)
            hit(f"env:{cuda_name}")
        for name in sorted(env):
            for prefix, advice in NO_EQUIVALENT.items():
                if name.startswith(prefix) and name not in ENV_MAP:
                    self.notes.append(f"{name} is not translated by ascend-compat: {advice}")
                    log.info("%s", self.notes[-1])
                    break
        return True

    def _note(self, text: str) -> None:
        self.notes.append(text)
        warnings.warn(f"ascend-compat: {text}", RuntimeWarning, stacklevel=2)

    def revert(self) -> None:
        for name, value in self.set.items():
            if self._env.get(name) == value:
                del self._env[name]
        self.set.clear()
        for name, value in self.moved.items():
            self._env.setdefault(name, value)
        self.moved.clear()
