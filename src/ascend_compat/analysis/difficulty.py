"""Migration difficulty per file and overall: easy / moderate / hard, with the reasons.

* easy: every finding is handled automatically (the runtime shim runs it; migrate can rewrite it);
* moderate: something runs with different semantics, numerics or speed (partial), or a few
  local manual edits (at most 3, none structural);
* hard: custom CUDA extensions / kernels, CUDA-only libraries without a drop-in (imported
  unconditionally: an import guarded by ``except ImportError`` is optional and rated partial),
  Triton kernels, or more than 3 manual edits. A file that only imports the project's Triton code is
  rated by its other findings (the kernels' own file carries their difficulty). C++ device references
  (``torch::kCUDA``) are local edits and make a file moderate at most.

The whole input is as hard as its hardest file; files that could not be analysed are listed as
reasons (the rating cannot vouch for them).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, List

from ascend_compat.analysis.findings import FileResult, Finding
from ascend_compat.analysis.rules import triton_kernel
from ascend_compat.analysis.rules.catalog import RULES
from ascend_compat.knowledge import libraries

LEVELS = ("none", "easy", "moderate", "hard")
STRUCTURAL = {"cuda-extension", "cuda-source", "triton-kernel"}
MAX_LOCAL_MANUAL = 3


@dataclass
class Rating:
    level: str
    reasons: List[str] = field(default_factory=list)


def _library_name(f: Finding) -> str:
    """The listed library a cuda-library finding is about (its import or a use site)."""
    name = f.message.split(":", 1)[0].replace("import of ", "")
    rec = libraries.lookup(name)
    if rec is not None and rec.dropin and not rec.provided(name.rsplit(".", 1)[0] if "." in name else name) \
            and not rec.provided(name):
        return name  # a part the drop-in does not provide (apex.contrib)
    return rec.name if rec is not None else name


def rate_findings(findings: Iterable[Finding]) -> Rating:
    """Rating of a set of findings (one file or all). An import of the project's Triton code does not make
    the importing file harder: its kernels are ported, and rated, in the file that defines them."""
    findings = list(findings)
    if not findings:
        return Rating("none", ["no CUDA-specific code found"])
    elsewhere = [f for f in findings if triton_kernel.rated_elsewhere(f)]
    if elsewhere:
        rest = rate_findings(f for f in findings if not triton_kernel.rated_elsewhere(f))
        note = f"{len(elsewhere)} import(s) of the project's Triton code, rated where its kernels are defined"
        return Rating("easy" if rest.level == "none" else rest.level,
                      [note] if rest.level == "none" else rest.reasons + [note])
    by_handling = Counter(f.handling for f in findings)
    manual = [f for f in findings if f.handling == "manual"]
    partial = [f for f in findings if f.handling == "partial"]
    reasons: List[str] = []
    # C++ device references (torch::kCUDA) are local edits, never a reason to call the input hard
    cpp_devices = [f for f in manual if f.rule == "device-string"]
    manual = [f for f in manual if f.rule != "device-string"]
    structural = Counter(f.rule for f in manual if f.rule in STRUCTURAL)
    libs = sorted({_library_name(f) for f in manual if f.rule == "cuda-library"})
    for rule, n in structural.most_common():
        reasons.append(f"{n} x {RULES[rule].title}: needs porting to AscendC / torch_npu ops")
    if libs:
        reasons.append("CUDA-only libraries without a drop-in: " + ", ".join(libs))
    level = "easy"
    if structural or libs or len(manual) > MAX_LOCAL_MANUAL:
        level = "hard"
        if len(manual) > MAX_LOCAL_MANUAL and not structural and not libs:
            reasons.append(f"{len(manual)} manual edits")
    elif manual or partial:
        level = "moderate"
        if manual:
            rules = Counter(f.rule for f in manual)
            reasons.append(f"{len(manual)} manual edit(s): " + ", ".join(f"{r} x{n}" for r, n in rules.most_common()))
    if cpp_devices:
        if level == "easy":
            level = "moderate"
        reasons.append(f"{len(cpp_devices)} C++ device reference(s) (torch::kCUDA) to edit by hand")
    if partial:
        rules = Counter(f.rule for f in partial)
        reasons.append(f"{len(partial)} reference(s) run with different semantics/numerics/speed: "
                       + ", ".join(f"{r} x{n}" for r, n in rules.most_common()))
    if level == "easy":
        reasons.append(f"all {by_handling['auto']} reference(s) handled by the runtime shim "
                       "(import ascend_compat / ascend-compat run) or rewritten by migrate")
    return Rating(level, reasons)


def rate_file(result: FileResult) -> Rating:
    return rate_findings(result.findings)


def rate_all(results: Iterable[FileResult]) -> Rating:
    """Overall rating: the hardest file's level, reasons aggregated over all files."""
    results = list(results)
    overall = rate_findings(f for r in results for f in r.findings)
    worst = max((LEVELS.index(rate_file(r).level) for r in results), default=0)
    level = LEVELS[max(worst, LEVELS.index(overall.level))]
    errors = [r for r in results if r.error]
    reasons = list(overall.reasons)
    if errors:
        reasons.append(f"{len(errors)} file(s) could not be analysed (see the errors)")
    return Rating(level, reasons)
