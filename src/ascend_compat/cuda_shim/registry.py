"""The one registry of runtime patches: declare, apply, count, undo.

A :class:`Patch` names its ``target`` as ``"module.path:Attr.path"``, gives the ``replacement``
(or, with ``wrap=True``, a function ``make(original) -> replacement``), the ``reason`` and the
torch / torch_npu versions it ``applies_to`` (``"torch>=2.5; torch_npu>=2.1"``).

:func:`apply_all` applies the changes it is given, in order and under one lock, then rebinds *stale
references*: every loaded module that still holds an original object under some name (``from
torch._utils import _get_available_device_type``) gets the replacement too. :func:`revert_all`
undoes everything in reverse order and puts back the original objects by identity, including
attributes that were inherited rather than owned (they are deleted again, not shadowed).

:func:`apply_all` does not look for changes already applied: the callers that may repeat
themselves guard against that (:func:`ascend_compat.cuda_shim.apply` knows whether the shim is
active; the library integrations apply through ``ecosystem.integrations._apply.apply_once``).

A patch whose module is not imported yet is applied when that module is imported (an import hook,
:mod:`ascend_compat.cuda_shim._import_hooks`); nothing is imported eagerly on its behalf.

Translations are counted per key (:func:`hit`); ``ASCEND_COMPAT_LOG_LEVEL=DEBUG`` logs each one
once per user call site.
"""
from __future__ import annotations

import collections
import importlib
import logging
import os
import sys
import threading
from typing import Any, Callable, Iterable

from ascend_compat._log import get_logger
from ascend_compat._versions import Version, VersionError, parse as parse_version, requirement_holds

__all__ = [
    "Change",
    "Patch",
    "apply_all",
    "counters",
    "hit",
    "is_active",
    "revert_all",
    "applied",
    "skipped",
    "version_matches",
]

log = get_logger("cuda_shim")

_MISSING = object()
_LOCK = threading.RLock()
_ACTIVE: list["Change"] = []  # applied changes, in order
_SKIPPED: list[tuple[str, str]] = []  # (target, why)
_PENDING: dict[str, list["Patch"]] = {}  # module name -> patches waiting for its import
_REBOUND: list[tuple[dict, str, Any, Any]] = []  # (module dict, name, original, replacement)
_MODULES_AT_APPLY: set = set()  # sys.modules keys when the first change was applied
_COUNTS: collections.Counter = collections.Counter()
_FIRST: list = []  # [(key, (file, line))] of the first translation
_SITES_SEEN: set = set()
_SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
_PKG_DIR = os.path.dirname(_SHIM_DIR)


class Change:
    """Something activation does and deactivation undoes. Subclasses implement apply/revert."""

    name: str = "?"
    reason: str = ""
    applies_to: str = ""

    def apply(self) -> bool:  # True when applied, False when not applicable here
        raise NotImplementedError

    def revert(self) -> None:
        raise NotImplementedError


class Patch(Change):
    """Replace one attribute. See the module docstring for the fields."""

    def __init__(
        self,
        target: str,
        replacement: Any,
        reason: str,
        applies_to: str = "",
        *,
        wrap: bool = False,
        rebind: bool = True,
        optional: bool = False,
        defer: bool = False,
        concept: str = "",
    ) -> None:
        if ":" not in target:
            raise ValueError(f"patch target must be 'module:attr.path', got {target!r}")
        self.target = target
        self.replacement = replacement
        self.reason = reason
        self.applies_to = applies_to
        self.wrap = wrap
        self.rebind = rebind
        self.optional = optional
        self.defer = defer
        self.concept = concept
        self._applied = False
        self._original = _MISSING
        self.replacement_object: Any = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.target

    @property
    def module_name(self) -> str:
        return self.target.split(":", 1)[0]

    @property
    def original(self) -> Any:
        """The object that was there before (``_MISSING`` sentinel if nothing was)."""
        return self._original

    def _resolve(self) -> tuple[Any, str] | None:
        mod_name, attr_path = self.target.split(":", 1)
        module = sys.modules.get(mod_name)
        if module is None:
            try:
                module = importlib.import_module(mod_name)
            except ImportError:
                return None
        *parents, attr = attr_path.split(".")
        owner = module
        for part in parents:
            owner = getattr(owner, part, _MISSING)
            if owner is _MISSING:
                return None
        return owner, attr

    def apply(self) -> bool:
        where = self._resolve()
        if where is None:
            if not self.optional:
                raise AttributeError(f"patch target {self.target} does not exist")
            return False
        owner, attr = where
        own = _own_dict(owner)
        self._had_own = own is not None and attr in own
        self._own_value = own[attr] if self._had_own else _MISSING
        original = getattr(owner, attr, _MISSING)  # may be missing: then the attribute is created
        if self.wrap:
            if original is _MISSING:
                if self.optional:
                    return False
                raise AttributeError(f"patch target {self.target} does not exist")
            raw = self._own_value
            if isinstance(raw, staticmethod):
                new = staticmethod(self.replacement(raw.__func__))
            elif isinstance(raw, classmethod):
                new = classmethod(self.replacement(raw.__func__))
            else:
                new = self.replacement(original)
        else:
            new = self.replacement
        self._owner, self._attr, self._original = owner, attr, original
        setattr(owner, attr, new)
        self.replacement_object = new
        self._applied = True
        return True

    def revert(self) -> None:
        if not self._applied:
            return
        owner, attr = self._owner, self._attr
        own = _own_dict(owner)
        current = own.get(attr, _MISSING) if own is not None else getattr(owner, attr, _MISSING)
        if current is not self.replacement_object:
            # someone replaced our replacement after us; theirs stays (undoing it is not ours to do)
            log.debug("not reverting %s: replaced by someone else since", self.target)
            self._applied = False
            return
        if self._had_own:
            setattr(owner, attr, self._own_value)
        else:
            try:
                delattr(owner, attr)
            except AttributeError:
                pass
        self._applied = False


def _own_dict(owner: Any) -> Any:
    try:
        return object.__getattribute__(owner, "__dict__")
    except AttributeError:
        return None


# --------------------------------------------------------------------------- versions

def version_matches(spec: str, versions: dict[str, Version | None]) -> bool:
    """True when every ``;``-separated clause of ``spec`` (``"torch>=2.5,<3; torch_npu>=2.1"``, each a
    package name and a ``packaging`` specifier set) holds for ``versions`` (package -> version).

    A clause about a package whose version is unknown (None) does not hold; a malformed clause raises ValueError.
    """
    return requirement_holds(spec, versions)


class _Versions(dict):
    """torch / torch_npu versions up front; any other distribution looked up when first asked."""

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            from importlib.metadata import PackageNotFoundError, version

            try:
                self[key] = parse_version(version(key))
            except (PackageNotFoundError, VersionError):  # not installed, or an unreadable version
                self[key] = None
        return dict.get(self, key, default)


def _versions() -> dict[str, Version | None]:
    from ascend_compat import backend

    return _Versions(torch=backend.torch_version(), torch_npu=backend.torch_npu_version())


# --------------------------------------------------------------------------- counters / logging

_DEBUG = False  # log.isEnabledFor(DEBUG), refreshed at activation (hot path: no method call)


def refresh_debug() -> bool:
    """Re-read whether translations are logged (done at activation; call after changing levels)."""
    global _DEBUG
    _DEBUG = log.isEnabledFor(logging.DEBUG)
    return _DEBUG


def hit(key: str, detail: str = "") -> None:
    """Count one translation under ``key``; at DEBUG, log it once per user call site. The first
    translation's key and call site are kept (:func:`first_hit`)."""
    if not _COUNTS:
        _FIRST[:] = [(key, _user_site())]
    _COUNTS[key] += 1
    if _DEBUG:
        site = _user_site()
        if (key, site) not in _SITES_SEEN:
            _SITES_SEEN.add((key, site))
            log.debug("%s%s at %s:%s", key, f" ({detail})" if detail else "", *site)


def _user_site() -> tuple[str, int]:
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PKG_DIR) and "/torch/" not in filename:
            return filename, frame.f_lineno
        frame = frame.f_back
    return "?", 0


def first_hit() -> tuple[str, tuple[str, int]] | None:
    """``(key, (file, line))`` of the first translation since the counters were last reset."""
    return _FIRST[0] if _FIRST else None


def counters() -> dict[str, int]:
    """Translation counts so far, by key (copy)."""
    return dict(_COUNTS)


def reset_counters() -> None:
    _COUNTS.clear()
    _FIRST.clear()
    _SITES_SEEN.clear()


# --------------------------------------------------------------------------- apply / revert

def is_active() -> bool:
    return bool(_ACTIVE) or bool(_PENDING)


def applied() -> list[Change]:
    """The changes currently applied, in order."""
    return list(_ACTIVE)


def pending() -> list[Change]:
    """The changes declared and waiting for their module's import."""
    with _LOCK:
        return [change for waiting in _PENDING.values() for change in waiting]


def skipped() -> list[tuple[str, str]]:
    """``(target, why)`` for declared patches that were not applied in this process."""
    return list(_SKIPPED)


def apply_all(changes: Iterable[Change]) -> int:
    """Apply ``changes`` in order (after any already applied); returns how many were applied.

    Idempotence is the caller's job (:func:`ascend_compat.cuda_shim.apply` holds the lock and
    knows whether the shim is active); on any exception everything applied so far is reverted.
    """
    with _LOCK:
        refresh_debug()
        if not _ACTIVE:
            _MODULES_AT_APPLY.update(sys.modules)
        versions = _versions()
        done = 0
        originals: dict[int, tuple[Any, Any]] = {}
        try:
            for change in changes:
                if isinstance(change, Patch) and change.defer and change.module_name not in sys.modules:
                    _PENDING.setdefault(change.module_name, []).append(change)  # versions checked then
                    continue
                if change.applies_to and not version_matches(change.applies_to, versions):
                    _SKIPPED.append((change.name, f"not for these versions ({change.applies_to})"))
                    continue
                if change.apply():
                    _ACTIVE.append(change)
                    done += 1
                    _note_original(change, originals)
                else:
                    _SKIPPED.append((change.name, "target not present"))
            _rebind(originals)
        except BaseException:
            _revert_locked()
            raise
        if _PENDING:
            from ascend_compat.cuda_shim import _import_hooks

            _import_hooks.watch(_PENDING.keys(), _apply_pending)
        return done


def _rebindable(change: Change) -> bool:
    """Only callables (functions, classes) are rebound: values such as tuples or bools are shared
    singletons (``()``, ``True``) that unrelated modules hold for unrelated reasons."""
    if not (isinstance(change, Patch) and change.rebind and change._applied):
        return False
    original, new = change.original, change.replacement_object
    if original is _MISSING or isinstance(new, (staticmethod, classmethod)):
        return False
    return callable(original) and not isinstance(original, (int, str, bool, tuple, list, dict))


def _note_original(change: Change, originals: dict[int, tuple[Any, Any]]) -> None:
    if _rebindable(change):
        originals[id(change.original)] = (change.original, change.replacement_object)


def _apply_pending(module_name: str) -> None:
    """Import-hook callback: ``module_name`` has just been imported; apply what waited for it."""
    with _LOCK:
        waiting = _PENDING.pop(module_name, [])
        originals: dict[int, tuple[Any, Any]] = {}
        versions = _versions()
        for change in waiting:
            if change.applies_to and not version_matches(change.applies_to, versions):
                _SKIPPED.append((change.name, f"not for these versions ({change.applies_to})"))
                continue
            try:
                ok = change.apply()
            except Exception as exc:  # a library patch must never break the user's import
                log.warning("could not apply %s: %s", change.name, exc)
                continue
            if ok:
                _ACTIVE.append(change)
                _note_original(change, originals)
            else:
                _SKIPPED.append((change.name, "target not present"))
        _rebind(originals)


def _rebind(originals: dict[int, tuple[Any, Any]]) -> None:
    """Point every loaded module's stale binding of an original at its replacement."""
    if not originals:
        return
    wanted = set(originals)
    for module in list(sys.modules.values()):
        d = _own_dict(module)
        if not isinstance(d, dict):
            continue
        if wanted.isdisjoint(map(id, d.values())):
            continue
        for name, value in list(d.items()):
            entry = originals.get(id(value))
            if entry is not None and entry[0] is value:
                d[name] = entry[1]
                _REBOUND.append((d, name, entry[0], entry[1]))


def revert_all() -> int:
    """Undo everything :func:`apply_all` did; returns how many changes were reverted."""
    with _LOCK:
        return _revert_locked()


def _revert_locked() -> int:
    n = len(_ACTIVE)
    # stale bindings first (including modules imported while active that copied a replacement)
    back = {id(new): old for _, _, old, new in _REBOUND}
    for change in _ACTIVE:
        if _rebindable(change):
            back.setdefault(id(change.replacement_object), change.original)
    for d, name, old, new in reversed(_REBOUND):
        if d.get(name) is new:
            d[name] = old
    _REBOUND.clear()
    if back:
        # Modules imported while active may have copied a replacement (`from torch.cuda import
        # Event`); give them the original. Modules that existed before activation were handled
        # through _REBOUND exactly, and the backend's own modules legitimately hold its objects.
        keys = set(back)
        for name, module in list(sys.modules.items()):
            if name in _MODULES_AT_APPLY or name.startswith(("ascend_compat", "torch_npu")):
                continue
            d = _own_dict(module)
            if not isinstance(d, dict) or keys.isdisjoint(map(id, d.values())):
                continue
            for attr, value in list(d.items()):
                if id(value) in back and getattr(value, "__module__", None) != name:
                    owner_patch = any(
                        isinstance(c, Patch) and c.replacement_object is value and _own_dict(c._owner) is d
                        for c in _ACTIVE
                    )
                    if not owner_patch:
                        d[attr] = back[id(value)]
    _MODULES_AT_APPLY.clear()
    for change in reversed(_ACTIVE):
        try:
            change.revert()
        except Exception as exc:  # keep reverting the rest; report the failure
            log.error("could not revert %s: %s", change.name, exc)
    _ACTIVE.clear()
    _PENDING.clear()
    _SKIPPED.clear()
    from ascend_compat.cuda_shim import _import_hooks

    _import_hooks.unwatch()
    return n


def make_wrapper(original: Callable, wrapper: Callable) -> Callable:
    """Give ``wrapper`` the identity metadata of ``original`` (name, doc, ``__wrapped__``)."""
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, attr, getattr(original, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = original
    wrapper.__ascend_compat__ = True
    return wrapper
