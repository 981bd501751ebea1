"""Stand-in classes for C types whose constructor must translate CUDA to NPU.

``torch.device`` (and ``torch.Generator``, ``torch.Event``, ``torch.Stream``) are C types that
cannot be subclassed or patched. While the shim is active, ``torch.device`` is a stand-in class
whose metaclass:

* ``__call__``: builds a *real* ``torch.device`` and, if it came out as ``cuda``, returns the real
  ``npu`` device with the same index. So every C++ API that takes a device accepts the result;
* ``__instancecheck__`` / ``__subclasscheck__``: delegate to the real class, so
  ``isinstance(x, torch.device)`` is unchanged;
* forwards every other class attribute to the real class;
* ``==`` and ``hash`` are the real class's, so tables keyed on ``torch.device`` find the stand-in too
  (torch.fx's code generation registers its ``device`` global only for an object equal to
  ``torch.device``; dynamo constant-folds calls of the classes in its set holding ``torch.device``).

Pickling: the real class is registered with :mod:`copyreg` to reduce through the stand-in, so a
pickled device is still written as the global ``torch.device`` (identical bytes) and unpickles
anywhere; while the shim is active a pickled ``cuda`` device unpickles as ``npu``.
"""
from __future__ import annotations

from typing import Any, Callable

_REAL: dict[str, type] = {}


def real_device_class(torch: Any) -> type:
    """The genuine C ``torch.device`` class even while ``torch.device`` is the stand-in."""
    if "device" not in _REAL:
        _REAL["device"] = _find_real(torch)
    return _REAL["device"]


def _find_real(torch: Any) -> type:
    cls = torch.device
    return getattr(cls, "__ascend_compat_real__", cls)


class _StandInMeta(type):
    """Metaclass for stand-ins: construct via a factory; isinstance/attributes go to the real class."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.__ascend_compat_real__)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, cls.__ascend_compat_real__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.__ascend_compat_factory__(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.__ascend_compat_real__, name)

    def __repr__(cls) -> str:
        return repr(cls.__ascend_compat_real__)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls.__ascend_compat_real__

    def __ne__(cls, other: Any) -> bool:
        return not _StandInMeta.__eq__(cls, other)

    def __hash__(cls) -> int:
        return hash(cls.__ascend_compat_real__)


def make_stand_in(real: type, factory: Callable[..., Any], module: str = "torch") -> type:
    """A class named like ``real`` whose calls go to ``factory`` and whose isinstance is ``real``'s."""
    ns = {
        "__module__": module,
        "__qualname__": real.__name__,
        "__doc__": real.__doc__,
        "__ascend_compat_real__": real,
        "__ascend_compat_factory__": staticmethod(factory),
    }
    return _StandInMeta(real.__name__, (), ns)
