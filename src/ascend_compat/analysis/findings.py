"""The records ``check`` produces: one :class:`Finding` per CUDA reference, one :class:`FileResult` per file.

Positions: ``line``/``end_line`` are 1-based; ``col``/``end_col`` are 1-based character columns.
In notebooks ``cell`` is the 1-based index of the cell in the notebook and lines count within it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass(slots=True)  # slots: a file of CUDA code can hold a million of them (docs/check_and_migrate.md, Bounds)
class Finding:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    rule: str
    category: str
    handling: str
    message: str
    suggestion: str
    cell: Optional[int] = None

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in _FIELDS}
        if self.cell is not None:
            d["cell"] = self.cell
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Finding":
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


#: the fields of a finding's dict, in order (``cell`` only in notebooks)
_FIELDS = tuple(name for name in Finding.__dataclass_fields__ if name != "cell")


#: the error kind of a path that holds no code: a FIFO, socket or device named like a source file, or a
#: broken symbolic link. ``check`` and ``migrate`` list it as skipped, and it never changes their exit
#: status (docs/cli.md, "Files left untouched"); every other error kind means code was left unread.
NOT_A_FILE = "not-a-file"


@dataclass
class FileResult:
    path: str
    kind: str  # python / notebook / cuda-source / cmake / cpp
    lines: int = 0
    findings: List[Finding] = field(default_factory=list)
    #: why the file could not be analysed (parse error, undecodable, too large, unreadable, symlink loop,
    #: not a file)
    error: Optional[str] = None
    error_kind: Optional[str] = None
    suppressed: int = 0
    #: what the file tells the rest of the project (:class:`ascend_compat.analysis.project.FileFacts`); not reported
    facts: Optional[object] = field(default=None, compare=False, repr=False)
    #: set by a second pass that found nothing the project's facts could change (internal to the analysis)
    reused: bool = field(default=False, compare=False, repr=False)

    @property
    def not_analysed(self) -> bool:
        """True when the file holds code that could not be (fully) read: counted toward ``--fail-on``."""
        return bool(self.error) and self.error_kind != NOT_A_FILE

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "lines": self.lines,
                "findings": [f.to_dict() for f in self.findings], "error": self.error,
                "error_kind": self.error_kind, "suppressed": self.suppressed}

    @classmethod
    def from_dict(cls, d: dict) -> "FileResult":
        return cls(path=d["path"], kind=d["kind"], lines=d["lines"],
                   findings=[Finding.from_dict(f) for f in d["findings"]], error=d.get("error"),
                   error_kind=d.get("error_kind"), suppressed=d.get("suppressed", 0))


def internal_error(exc: BaseException, doing: str = "analysing") -> str:
    """The one-line message of a bug met while handling one file (the file is named where it is shown)."""
    first = str(exc).splitlines()[0][:200] if str(exc).strip() else ""
    return (f"internal error while {doing} this file ({type(exc).__name__}{': ' + first if first else ''}); "
            "a bug in ascend-compat: rerun with --debug for the traceback and report it")
