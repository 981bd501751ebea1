"""The one version parser: torch, torch_npu and library versions through ``packaging``, CANN by a small key.

* :func:`parse` reads a PEP 440 version (``"2.13.0+cpu"``, ``"2.5.1.post1"``, ``"2.1.0.rc1"``); a text
  that is not one raises :class:`VersionError` naming it. :func:`release`, :func:`minor` and
  :func:`base` are its parts (``(2, 5, 1)``, ``(2, 5)``, ``"2.5.1"``).
* :func:`key` sorts such versions and never raises (an unreadable text sorts first, by its text).
* :func:`cann_key` sorts CANN, driver and firmware versions, which are not PEP 440:
  ``8.0.RC2.alpha003 < 8.0.RC2 < 8.0.0 < 8.3.RC1 < 9.1.0``, ``6.3.RC3 < 6.3.RC3.1``; alpha/beta/Tn
  before RCn before the release, ``+local`` ignored, ``8.5 == 8.5.0``.
* :func:`specifier` reads a ``packaging`` specifier set (``">=2.5,<3"``); :func:`contains` tests a
  version against one (pre-releases and ``+local`` builds included, as for installed packages);
  :func:`requirement_holds` evaluates ``"torch>=2.5,<3; torch_npu>=2.1"`` against installed versions;
  :func:`pinned` reads the release a distribution requirement pins (``"torch==2.5.1.*"`` -> ``"2.5.1"``).
"""
from __future__ import annotations

import functools
import re
from typing import Mapping, Optional, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["VersionError", "Version", "SpecifierSet", "parse", "release", "minor", "base", "key", "cann_key",
           "specifier", "contains", "requirement_holds", "pinned"]

VersionLike = Union[str, Version]


class VersionError(ValueError):
    """A text that is not a version (or version specifier) of the kind asked for."""


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> Version:
    try:
        return Version(text.strip())
    except InvalidVersion:
        raise VersionError(f"cannot read a version from {text!r}: expected a version such as "
                           "'2.5.1', '2.5.1.post1' or '2.13.0+cpu'") from None


def parse(text: VersionLike) -> Version:
    """``packaging`` Version of ``text`` (a Version is returned unchanged); VersionError if unreadable."""
    return text if isinstance(text, Version) else _parse(str(text))


def release(text: VersionLike) -> tuple[int, ...]:
    """``"2.13.0+cpu"`` -> ``(2, 13, 0)``; ``"2.5.1.post1"`` -> ``(2, 5, 1)``; ``"2.5"`` -> ``(2, 5)``."""
    return parse(text).release


def minor(text: VersionLike) -> tuple[int, int]:
    """``(major, minor)``: ``"2.5.1.post1"`` -> ``(2, 5)``; ``"2"`` -> ``(2, 0)``."""
    rel = parse(text).release
    return rel[0], (rel[1] if len(rel) > 1 else 0)


def base(text: VersionLike) -> str:
    """The release without pre/post/dev/local parts: ``"2.5.1.post1"`` / ``"2.5.1+cpu"`` / ``"2.1.0rc1"`` -> ``"2.5.1"`` / ``"2.5.1"`` / ``"2.1.0"``."""
    return parse(text).base_version


def key(text: VersionLike) -> tuple:
    """Sort key for PEP 440 versions that never raises: readable versions in ``packaging`` order,
    after every unreadable text (those sort among themselves by text)."""
    try:
        return (1, parse(text))
    except VersionError:
        return (0, str(text))


_TAG_RANK = {"alpha": -4, "a": -4, "beta": -3, "b": -3, "t": -2, "rc": -1, "post": 1}
_CANN_PARTS = 8  # keys are padded with (0, 0) to this length (longer versions keep their length)
_TOKEN = re.compile(r"(\d*)(alpha|beta|rc|post|a|b|t)(\d*)")


@functools.lru_cache(maxsize=512)
def cann_key(text: str) -> tuple:
    """Sort key for CANN / driver / firmware versions (order in the module docstring); never raises.

    Each dot-separated part becomes ``(rank, number)``: numbers rank 0, pre-release tags below 0,
    ``post`` above; missing trailing parts count as ``(0, 0)``; an unreadable part ranks lowest.
    """
    parts: list[tuple[int, int]] = []
    for token in re.split(r"[.\-_]", str(text).strip().lower().lstrip("v").split("+")[0]):
        if token.isdigit():
            parts.append((0, int(token)))
            continue
        m = _TOKEN.fullmatch(token)
        if m is None:
            parts.append((-9, 0))
            continue
        if m.group(1):
            parts.append((0, int(m.group(1))))
        parts.append((_TAG_RANK[m.group(2)], int(m.group(3) or 0)))
    while parts and parts[-1] == (0, 0):
        parts.pop()
    return tuple(parts + [(0, 0)] * (_CANN_PARTS - len(parts)))


@functools.lru_cache(maxsize=256)
def specifier(text: str) -> SpecifierSet:
    """The ``packaging`` SpecifierSet of ``text`` (``""`` = every version); VersionError if malformed."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise VersionError(f"bad version specifier {text!r}: expected a specifier set such as '>=2.5,<3'") from None


def contains(spec: str, version: VersionLike) -> bool:
    """True when ``version`` satisfies ``spec`` (pre-releases and local builds count as that version)."""
    return specifier(spec).contains(parse(version), prereleases=True)


_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9_.\-]*)\s*(.*)")


def requirement_holds(requirement: str, versions: Mapping[str, Optional[VersionLike]]) -> bool:
    """True when every ``;``-separated clause ``"<package><specifier set>"`` holds for ``versions``
    (package name -> version, or None when not installed). A clause about a package whose version
    is unknown does not hold. A malformed clause raises VersionError."""
    for clause in filter(None, (c.strip() for c in requirement.split(";"))):
        m = _NAME.fullmatch(clause)
        if m is None:
            raise VersionError(f"bad version specifier {clause!r} in {requirement!r}")
        spec = specifier(m.group(2))
        have = versions.get(m.group(1))
        if have is None or not spec.contains(parse(have), prereleases=True):
            return False
    return True


def pinned(requirement: str, name: str) -> Optional[str]:
    """The version a requirement line (``Requires-Dist``) pins ``name`` to with ``==`` (``"torch==2.5.1.*"``
    -> ``"2.5.1"``), or None: another package, no single ``==`` pin, or an unreadable line."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    specs = list(req.specifier)
    if canonicalize_name(req.name) != canonicalize_name(name) or len(specs) != 1 or specs[0].operator != "==":
        return None
    return specs[0].version.removesuffix(".*")
