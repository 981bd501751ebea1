"""Explain any Ascend error code: numeric ACL/runtime/aclnn/HCCL codes, CANN E-codes, torch_npu ERRxxyyy.

``explain("507035")``, ``explain("EZ9999")``, ``explain("ERR01100")`` return an :class:`Explained`:
the meaning, likely causes, fixes and helpful commands when we have a hand-written explanation;
otherwise what the code's structure says (family by numeric range, module letter and user/internal
range for E-codes, module and type for ERR codes) and, for numbers, the nearest known codes.
``explain`` raises ``ValueError`` for text that is not a code in any of these formats.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ascend_compat.errors import codes as _codes
from ascend_compat.errors.explanations import ASYNC_DEBUG, EXPLANATIONS, PLOG

#: torch_npu ERRxxyyy module numbers (torch_npu/utils/_error_code.py ``_SubModuleID``)
ERR_MODULES = {0: "PTA (torch_npu framework)", 1: "OPS (operators)", 2: "DIST (distributed / HCCL)",
               3: "GRAPH (graph mode / torchair)", 4: "PROF (profiler)", 99: "UNKNOWN (not from torch_npu)"}
#: torch_npu ERRxxyyy error types (``ErrCode``)
ERR_TYPES = {0: "success", 1: "invalid parameter", 2: "invalid type", 3: "invalid value", 4: "invalid pointer",
             5: "internal error", 6: "memory error", 7: "feature not supported", 8: "resource not found",
             9: "resource unavailable", 10: "system call failed", 11: "timeout", 12: "permission error",
             100: "call to an ACL API failed", 200: "call to an HCCL API failed", 300: "call to a GE API failed",
             999: "application exception"}
_ERR_TYPE_HINTS = {
    100: "the numeric ACL code ('error code is N') and any E-code printed with it say what failed",
    200: "the HCCL result ('error code is N') and the EI code printed with it say what failed",
    6: "device memory: see 'NPU out of memory' handling (smaller batch, PYTORCH_NPU_ALLOC_CONF)",
    11: "a timeout: look for a hung op or a missing rank",
}

#: CANN E-code module letters we can name with confidence (second character of the code)
E_MODULES = {
    "Z": "operators (aclnn / AI Core and AI CPU ops)",
    "E": "runtime",
    "I": "HCCL (collective communication)",
    "J": "HCCP (communication processes / RoCE)",
    "L": "driver and AI CPU path",
    "1": "graph engine / model compilation (GE, ATC)",
}
E_LEVELS = {"E": "error", "W": "warning", "I": "info"}

_NUMERIC = re.compile(r"^\d{1,7}$")
_HCCL = re.compile(r"^hccl:(\d{1,2})$", re.I)
_ECODE = re.compile(r"^([EWI])([0-9A-Z])(\d{4})$")
_ERRCODE = re.compile(r"^ERR(\d{2})(\d{3})$")


@dataclass
class Explained:
    """The explanation of one code, ready to print (``to_text``) or serialise (``to_dict``)."""

    code: str
    kind: str  # "numeric" | "hccl" | "ecode" | "torch_npu"
    title: str
    meaning: str
    known: bool  # True: a specific entry exists (table row or hand-written text)
    symbols: list[str] = field(default_factory=list)
    family: str = ""
    family_meaning: str = ""
    causes: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    helps: list[str] = field(default_factory=list)
    see_also: list[str] = field(default_factory=list)
    nearest: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_text(self) -> str:
        lines = [f"{self.code}  {self.title}"]
        lines.append(f"  meaning:  {self.meaning}")
        if self.family_meaning:
            lines.append(f"  family:   {self.family}: {self.family_meaning}")
        for label, items in (("causes", self.causes), ("fix", self.fixes), ("helps", self.helps)):
            for i, item in enumerate(items):
                lines.append(f"  {label + ':' if i == 0 else '':<9} - {item}")
        if self.nearest:
            lines.append(f"  nearest known codes: {', '.join(self.nearest)}")
        if self.see_also:
            lines.append(f"  see also: {', '.join(self.see_also)}")
        return "\n".join(lines)


def _apply(out: Explained, key: str) -> Explained:
    e = EXPLANATIONS.get(key)
    if e is not None:
        out.meaning = e.meaning
        out.known = True
        out.causes, out.fixes = list(e.causes), list(e.fixes)
        out.helps, out.see_also = list(e.helps), list(e.see_also)
    return out


def _explain_number(n: int) -> Explained:
    fam = _codes.family_of(n)
    title, fam_meaning, first_step = _codes.FAMILIES[fam]
    rows = _codes.lookup(n)
    key = f"hccl:{n}" if fam == "hccl" else str(n)
    out = Explained(code=str(n), kind="hccl" if fam == "hccl" else "numeric", title=title,
                    meaning="", known=bool(rows), symbols=[r.symbol for r in rows], family=fam,
                    family_meaning=fam_meaning)
    if rows:
        out.title = " / ".join(r.symbol for r in rows)
        out.meaning = rows[0].label or fam_meaning
    elif fam == "unknown":  # say it once: no table row and no range
        out.title = "not a known Ascend error code"
        out.meaning = (f"not in the code table of torch_npu {_codes.table_version()} and in no ACL, runtime, "
                       "graph-engine, aclnn or HCCL code range; check the number for a typo")
        out.family_meaning = ""
    _apply(out, key)
    if not out.meaning:
        out.meaning = f"not in the code table of torch_npu {_codes.table_version()}; by its range: {title}"
    if not out.fixes:
        out.fixes = [first_step]
    if not out.helps and fam not in ("hccl", "unknown"):
        out.helps = list(ASYNC_DEBUG)
    if not rows:
        out.nearest = [f"{e.code} {e.symbol}" for e in _codes.nearest(n)]
    return out


def _explain_ecode(code: str, level: str, module: str, number: int) -> Explained:
    mod = E_MODULES.get(module, f"module '{module}' (not one we can name)")
    rng = "internal-error range (9000-9999): raised inside a CANN component; the text after the code says what " \
          "failed, which can still be caused by your inputs" \
        if number >= 9000 else "user-error range (0000-8999): caused by input, configuration or environment"
    out = Explained(code=code, kind="ecode", title=f"CANN {E_LEVELS[level]} code, {mod}",
                    meaning=f"{E_LEVELS[level]} reported by {mod}", known=False, family=f"E{module}",
                    family_meaning=rng)
    _apply(out, code)
    if not out.known:
        out.fixes = ["read the message text that follows the code: CANN prints the reason and often the op name",
                     "a CANN install lists every E-code in <cann>/runtime/conf/error_manager/error_code.json"]
        out.helps = list(ASYNC_DEBUG)
    return out


def _explain_err(code: str, module: int, typ: int) -> Explained:
    mod = ERR_MODULES.get(module, f"module {module:02d} (unknown)")
    t = ERR_TYPES.get(typ, f"type {typ:03d} (unknown)")
    short = mod.split(" ")[0] if module in ERR_MODULES else f"module {module:02d}"
    out = Explained(code=code, kind="torch_npu", title=f"torch_npu {short}: {t}",
                    meaning=f"torch_npu error in {mod}: {t}", known=False, family=f"ERR{module:02d}",
                    family_meaning=mod)
    _apply(out, code)
    if not out.known:
        out.fixes = [_ERR_TYPE_HINTS.get(typ, "read the message text in front of the [ERROR] line")]
        out.helps = list(ASYNC_DEBUG) if typ in (100, 5) else [PLOG]
    return out


def explain(code: str | int) -> Explained:
    """Explain one code; raises ``ValueError`` (with the accepted formats) for anything else."""
    text = str(code).strip()
    up = text.upper()
    if _NUMERIC.match(text):
        return _explain_number(int(text))
    m = _HCCL.match(text)
    if m:
        return _explain_number(int(m.group(1)))
    m = _ECODE.match(up)
    if m:
        return _explain_ecode(up, m.group(1), m.group(2), int(m.group(3)))
    m = _ERRCODE.match(up)
    if m:
        return _explain_err(up, int(m.group(1)), int(m.group(2)))
    raise ValueError(
        f"{text!r} is not an error code: expected a number (507035, 107002, HCCL 1-24), "
        "a CANN code like EZ9999 / EI0002, or a torch_npu code like ERR00100")
