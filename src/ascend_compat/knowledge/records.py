"""Record types of the knowledge layer, the versions they apply to and the advice sentence form.

Advice texts (``advice`` of every record) are one imperative sentence: lower-case verb or a
capitalised name first, a final full stop, no placeholders (``<name>``, ``...``), no word twice in a
row. :func:`advice_problems` says what breaks the form; ``tests/knowledge`` checks every record.

``versions`` (:class:`Versions`) says which torch / torch_npu / library versions a record applies
to, as ``packaging`` specifier sets evaluated by :mod:`ascend_compat._versions`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ascend_compat import _versions

AUTO, PARTIAL, MANUAL = "auto", "partial", "manual"
#: environment-variable converters of the shim that keep the value's meaning (migrate may rename such variables)
_SAME_VALUE = (None, "visible_devices", "alloc_conf")
VERDICTS = (AUTO, PARTIAL, MANUAL)

_PLACEHOLDER = re.compile(r"<[A-Za-z_ ]+>|\.\.\.|\bTODO\b|\bXXX\b")
_REPEAT = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)
#: the verbs advice sentences start with (after them, the rest of the sentence says what and how)
VERBS = ("use", "keep", "port", "replace", "install", "run", "set", "remove", "compare", "test", "pass",
         "build", "write", "move", "call", "drop", "compute", "launch", "catch", "upgrade")


def placeholder_problems(text: str) -> list[str]:
    """What makes a text unfit to print as given: empty, padded, placeholders, doubled words."""
    problems = []
    if not text or text != text.strip():
        problems.append("empty or padded")
    if _PLACEHOLDER.search(text):
        problems.append("contains a placeholder")
    if "  " in text:
        problems.append("double space")
    m = _REPEAT.search(text)
    if m:
        problems.append(f"word repeated: {m.group(0)!r}")
    return problems


def advice_problems(text: str) -> list[str]:
    """What is wrong with a record's advice sentence (empty list = it follows the sentence form)."""
    problems = placeholder_problems(text)
    if not text.endswith(".") or text.endswith(".."):
        problems.append("does not end with one full stop")
    first = text.split(" ", 1)[0] if text else ""
    if not (first in VERBS or first[:1].isupper()):
        problems.append(f"starts with {first!r}, not a verb or a capital")
    return problems


@dataclass(frozen=True)
class Versions:
    """torch / torch_npu / library versions a record applies to (``packaging`` specifier sets; ``""`` = all)."""

    torch: str = ""
    torch_npu: str = ""
    library: str = ""

    def __post_init__(self) -> None:
        for spec in (self.torch, self.torch_npu, self.library):
            _versions.specifier(spec)  # a malformed range fails at import, naming it

    def applies(self, torch: Optional[str] = None, torch_npu: Optional[str] = None,
                library: Optional[str] = None) -> bool:
        """True unless a given version lies outside its range (a version not given restricts nothing)."""
        return all(v is None or _versions.contains(spec, v)
                   for spec, v in ((self.torch, torch), (self.torch_npu, torch_npu), (self.library, library)))


EVERY = Versions()


@dataclass(frozen=True)
class EnvVar:
    """A CUDA/NCCL environment variable (``name``; a trailing ``*`` makes it a prefix).

    ``ascend``: the Ascend variable carrying the same setting, or None. ``converter``: the shim's
    value converter (see ``cuda_shim.patches.env``) when the shim translates it (``shim_maps``).
    ``rule``: the check rule id reporting it. ``example``: ``(value, expected Ascend value)`` set in
    the environment of a simulated run, for records the shim translates; None for the others,
    whose example is that the variable is left alone.
    """

    name: str
    rule: str
    verdict: str
    ascend: Optional[str]
    reason: str
    converter: Optional[str] = None
    shim_maps: bool = False
    example: Optional[tuple[str, str]] = None
    versions: Versions = EVERY
    #: whether migrate renames the variable to ``ascend`` in the code; None = decided by the one rule of
    #: :attr:`rewrite` (every variable the shim translates without changing its value is renamed)
    migrate_renames: Optional[bool] = None

    @property
    def rewrite(self) -> Optional[tuple[str, str]]:
        """``(before, after)`` of migrate's rewrite of the variable's name, or None.

        Decided once for every variable check rates ``auto``: migrate renames it when its value means the same
        under the Ascend name (no converter, or one that only validates: visible devices, allocator keys);
        a variable whose value the shim must convert stays for the shim (:attr:`left_to_shim` says why)."""
        renames = self.migrate_renames
        if renames is None:
            renames = self.verdict == AUTO and self.shim_maps and self.converter in _SAME_VALUE
        return (self.name, self.ascend) if renames and self.ascend else None

    @property
    def left_to_shim(self) -> Optional[str]:
        """Why migrate leaves a variable check rates ``auto`` as it is (the shim translates it), else None."""
        if self.verdict != AUTO or self.rewrite is not None:
            return None
        return (f"the shim converts its value for {self.ascend} ({self.reason}); renaming it would hand "
                f"{self.ascend} an unconverted value")

    @property
    def advice(self) -> str:
        if self.ascend and not self.shim_maps:
            return f"set {self.ascend} instead."
        if self.ascend:
            return f"set {self.ascend} (the shim copies {self.name} there when {self.ascend} is unset)."
        return "remove it, since it has no effect on Ascend."


@dataclass(frozen=True)
class Library:
    """A CUDA-only (or CUDA-first) third-party library, keyed by import name or dotted prefix.

    ``dropin``: the ascend-compat drop-in module answering its imports under the shim, if any; ``provides``: the
    modules that drop-in answers (the support matrix check and the import hook both read).
    ``example``: a snippet that uses the library's main entry point; under ``ascend-compat run
    --simulate`` it must print ``npu`` for ``auto``/``partial`` drop-ins and raise ImportError for
    ``manual`` ones (the library cannot be installed or does not run on Ascend). ``expect``: for
    ``partial`` records, the last line the example prints, which shows the documented difference.
    """

    name: str
    verdict: str
    what: str
    replacement: str
    dropin: Optional[str] = None
    example: Optional[str] = None
    expect: Optional[str] = None
    versions: Versions = EVERY
    #: the modules the drop-in answers -> the ascend-compat module implementing each (``""``: an empty
    #: package; ``"pkg:attr"``: an attribute of a module); an import of any other module of the library fails
    provides: tuple = ()

    @property
    def advice(self) -> str:
        return self.replacement

    def provided(self, module: str) -> bool:
        """Whether importing ``module`` (this library or one of its submodules) works under the shim."""
        return self.dropin is None or module in dict(self.provides)


@dataclass(frozen=True)
class Switch:
    """A call (or keyword argument) of a device-generic library that turns on one of its CUDA-only back-ends.

    ``call``: the method name (``"enable_xformers_memory_efficient_attention"``), or ``"keyword=value"`` for a
    keyword argument (``"attn_implementation=flash_attention_2"``). ``owner``: the library offering the switch;
    ``library``: the CUDA-only library it turns on (a :class:`Library` record name); ``verdict`` and ``reason``:
    what happens on Ascend; ``advice``: the owner's Ascend alternative, one sentence.
    """

    call: str
    owner: str
    library: str
    verdict: str
    reason: str
    advice: str


@dataclass(frozen=True)
class Construct:
    """A CUDA construct of one ``kind`` (``"device"``, ``"backend"``, ``"extension"``) and its Ascend counterpart.

    ``name``: the construct as written in CUDA code; ``rule``: the check rule reporting it (None:
    check does not report it, and ``unreported`` says why);
    ``verdict`` and ``reason``: what happens on Ascend without an edit and why; ``advice``: one
    sentence; ``rewrite``: ``(before, after)`` of migrate's rewrite, or None when migrate leaves it.
    ``example`` runs under ``ascend-compat run --simulate`` and its last printed line must be
    ``expect`` (``auto``: lands on npu; ``partial``: shows the documented difference). A ``manual``
    example must raise an exception of type ``expect``; ``fixed`` is the example after the advised
    edit (None when the edit is a port no snippet can show), whose last line must be ``fixed_expect``
    (for ``partial`` records: the advised edit that removes the difference).
    """

    kind: str
    name: str
    rule: Optional[str]
    verdict: str
    counterpart: Optional[str]
    reason: str
    advice: str
    example: str
    expect: str
    rewrite: Optional[tuple[str, str]] = None
    fixed: Optional[str] = None
    fixed_expect: Optional[str] = None
    versions: Versions = field(default=EVERY)
    #: why check does not report the construct (given exactly when ``rule`` is None)
    unreported: Optional[str] = None

    def __post_init__(self) -> None:
        if (self.rule is None) != (self.unreported is not None):
            raise ValueError(f"{self.name}: a construct check does not report says why (unreported), and only then")


#: what the shim installs for a ``torch.cuda`` name (:attr:`CudaName.action`)
MAP, EMULATE, UNSUPPORTED, KEEP = "map", "emulate", "unsupported", "keep"
ACTIONS = (MAP, EMULATE, UNSUPPORTED, KEEP)


@dataclass(frozen=True)
class CudaName:
    """A public ``torch.cuda`` name (``name``, relative to ``torch.cuda``) and what it becomes on Ascend.

    ``action``: what the shim installs (``map``: the ``torch.npu`` counterpart ``counterpart``, device
    arguments translated; ``emulate``: ascend-compat's own behaviour; ``unsupported``: an error
    naming the API and the advice; ``keep``: torch's object stays). ``rule`` and ``verdict``: how
    check reports ``torch.cuda.<name>``; ``reason``: what happens on Ascend; ``advice``: one sentence
    (also the text of the shim's error for ``unsupported``). ``versions.torch_npu``: the torch_npu
    versions that have ``counterpart`` (outside them a ``map`` name raises, and check says manual).
    ``example``/``expect``/``fixed``/``fixed_expect`` as for :class:`Construct`; ``example`` None
    means the knowledge layer generates it from the action (``knowledge.cuda_names.example_of``).
    """

    name: str
    action: str
    rule: str
    verdict: str
    counterpart: Optional[str]
    reason: str
    advice: str
    example: Optional[str] = None
    expect: Optional[str] = None
    fixed: Optional[str] = None
    fixed_expect: Optional[str] = None
    versions: Versions = field(default=EVERY)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS or self.verdict not in VERDICTS:
            raise ValueError(f"torch.cuda.{self.name}: action {self.action!r} / verdict {self.verdict!r} unknown")
        if (self.action == UNSUPPORTED) != (self.verdict == MANUAL):
            raise ValueError(f"torch.cuda.{self.name}: manual exactly when the shim refuses it")

    kind = "cuda-name"

    @property
    def npu_name(self) -> Optional[str]:
        """``counterpart`` relative to ``torch.npu`` (``"NPUGraph"``), or None."""
        if self.counterpart and self.counterpart.startswith("torch.npu."):
            return self.counterpart[len("torch.npu."):]
        return None

    @property
    def rewrite(self) -> Optional[tuple[str, str]]:
        """``(before, after)`` of migrate's rewrite of ``torch.cuda.<name>``, or None when migrate leaves it."""
        # capability tests and float64 need a decision migrate cannot make
        if self.npu_name is None or self.rule in ("device-capability", "float64") or self.verdict == MANUAL:
            return None
        return f"torch.cuda.{self.name}", self.counterpart
