"""Rule ``nvidia-smi``: a command line that runs an NVIDIA-only tool (nvidia-smi, nvidia-cuda-mps-control, nsys...).

Reported: a ``subprocess`` / ``os.system`` / ``os.popen`` command (a list, or a shell string searched word by
word, also through grep's ``[n]vidia-...`` self-exclusion idiom), ``shutil.which`` of such a tool, and a list
or tuple literal whose first element is one (a command kept for later). A message that names the tool is not
a command and is left alone. The tools and their Ascend counterparts are
:data:`ascend_compat.knowledge.libraries.NVIDIA_TOOLS`.
"""
from __future__ import annotations

import ast
import re

from ascend_compat.analysis.rules.base import MANUAL, Rule, const_str
from ascend_compat.knowledge.libraries import NVIDIA_TOOLS

RULE = Rule('nvidia-smi', 'environment', MANUAL, 'NVIDIA command-line tool',
            'nvidia-smi and the other NVIDIA tools do not exist on Ascend hosts; running them or parsing their '
            'output fails.',
            'use npu-smi info, or torch.npu.mem_get_info()/device_count() from Python.', order=21)
TRIGGERS = ("nvidia", "cuda")
#: the other tools are reported in a command string or list element that starts with them
TRIGGER_STRINGS = tuple(sorted(t for t in NVIDIA_TOOLS if "nvidia" not in t and "cuda" not in t))
_RUNNERS = ("os.system", "os.popen", "shutil.which")
_CLASS = re.compile(r"\[(\w)\]")  # grep's self-exclusion: ps | grep '[n]vidia-smi'
_TOOL = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(t) for t in sorted(NVIDIA_TOOLS, key=len, reverse=True))
                   + r")(?![\w.-])")


def tool_in(command: str, first_word_only: bool = False):
    """The NVIDIA tool a command line runs, or None."""
    text = _CLASS.sub(r"\1", command)
    word = text.split(" ", 1)[0] if text else ""
    first = word if word in NVIDIA_TOOLS else None
    if first_word_only or first:
        return first
    m = _TOOL.search(text)  # further in a shell command: the tools with a trigger word in their name
    return m.group(1) if m and ("nvidia" in m.group(1) or "cuda" in m.group(1)) else None


def _report(v, node, tool: str, how: str) -> None:
    advice = NVIDIA_TOOLS[tool]
    v.report(node, RULE.id, f"{how} {tool}, which Ascend hosts do not have",
             f"use {advice}." if not advice.startswith("nothing") else "remove it: " + advice[len("nothing: "):] + ".")


def on_call(v, node, q, attr) -> None:
    """``subprocess.run(["nvidia-smi", ...])``, ``os.system("echo quit | nvidia-cuda-mps-control")``,
    ``shutil.which("nvidia-smi")``."""
    if not node.args or not q or not (q.startswith("subprocess.") or q in _RUNNERS):
        return
    first = node.args[0]
    if type(first) in (ast.List, ast.Tuple):
        s = const_str(first.elts[0]) if first.elts else None
        tool = tool_in(s, first_word_only=True) if s is not None else None
        if tool:
            _report(v, first.elts[0], tool, "runs")
        return
    s = const_str(first)
    tool = tool_in(s) if s is not None else None
    if tool:
        _report(v, first, tool, "looks for" if q == "shutil.which" else "runs")


def on_assign(v, node, targets, value, augmented: bool) -> None:
    """``cmd = ["nvidia-smi", "--query-gpu=..."]``: a command line kept for later."""
    if type(value) in (ast.List, ast.Tuple) and value.elts:
        s = const_str(value.elts[0])
        tool = tool_in(s, first_word_only=True) if s is not None else None
        if tool:
            _report(v, value.elts[0], tool, "a command line for")
