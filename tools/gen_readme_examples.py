"""Regenerate the example outputs in README.md by running each command; ``--check`` compares instead.

Usage (from anywhere)::

    python tools/gen_readme_examples.py            # rewrite the example blocks of README.md
    python tools/gen_readme_examples.py --check    # exit 1 if an example's output no longer matches

Each example in README.md sits between ``<!-- example: NAME -->`` and ``<!-- end example -->`` as a
``console`` block: ``$ COMMAND`` and its output. The commands are those of :data:`EXAMPLES`, run from
the repository root exactly as shown (``ascend-compat`` is this checkout's ``python -m
ascend_compat``), without colour, with an 100-column terminal width and no progress output; the
user's home directory is shown as ``~``.

``--check`` is robust to what legitimately varies between runs and machines (timings, losses,
versions, sizes): it compares the command lines, and the first :data:`CHECK_LINES` lines of each
output with every number masked. It fails on a missing or unknown example and on a changed message,
format or structure at the top of an output. Examples that describe the installed torch build
(``doctor``) are regenerated and compared only with the CPU build the README's set-up installs.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CHECK_LINES = 5


class Example(NamedTuple):
    name: str
    command: str
    streams: str = "stdout"  # "stdout" or "both" (stderr appended after stdout)
    max_lines: int = 30
    #: the output describes the installed torch build; the README shows the CPU build the set-up installs
    cpu_torch_only: bool = False


EXAMPLES = (
    Example("run-simulate", "ascend-compat run --simulate examples/train_cuda.py"),
    Example("check", "ascend-compat check --summary examples/"),
    Example("check-concise", "ascend-compat check --format concise examples/train_cuda.py", max_lines=8),
    Example("migrate", "ascend-compat migrate examples/train_cuda.py", streams="both", max_lines=14),
    Example("doctor", "ascend-compat doctor", max_lines=8, cpu_torch_only=True),
    Example("error-code", "ascend-compat error 107002"),
    Example("error-log", "ascend-compat error --log tests/errors/fixtures/logs/cpu_fallback.log", max_lines=12),
    Example("audit", "ascend-compat audit examples/fallback_ops.py"),
    Example("profile", "ascend-compat profile --simulate examples/slow_step.py", max_lines=24),
)

_BLOCK = re.compile(r"<!-- example: (?P<name>[\w-]+) -->\n```console\n(?P<body>.*?)```\n<!-- end example -->", re.S)


def run(example: Example) -> str:
    """The block body for ``example``: ``$ command`` and its (possibly shortened) output."""
    words = shlex.split(example.command)
    argv = [sys.executable, "-m", "ascend_compat", *words[1:]] if words[0] == "ascend-compat" else words
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_COMPAT_", "FORCE_COLOR"))}
    env.update(NO_COLOR="1", COLUMNS="100", CI="1", PYTHONWARNINGS="ignore::FutureWarning")
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + (proc.stderr if example.streams == "both" else "")
    home = os.path.expanduser("~")
    if len(home) > 1:
        out = out.replace(home + os.sep, "~" + os.sep)  # the same text on every machine
    lines = [line.rstrip() for line in out.rstrip("\n").split("\n")]
    if len(lines) > example.max_lines:
        lines = lines[: example.max_lines] + ["..."]
    return f"$ {example.command}\n" + "\n".join(lines) + "\n"


def blocks(text: str) -> Dict[str, str]:
    """Example name -> block body, as found in README text."""
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}


def stable(body: str) -> List[str]:
    """What ``--check`` compares: the command, then the first output lines with numbers masked."""
    lines = body.rstrip("\n").split("\n")
    return [re.sub(r"\d+(?:[.,]\d+)*", "0", line) for line in lines[: CHECK_LINES + 1]]


def check(text: str) -> List[str]:
    """Problems found comparing README text with fresh runs (empty = up to date)."""
    found = blocks(text)
    problems = [f"README has an example {name!r} that {Path(__file__).name} does not know"
                for name in found if name not in {e.name for e in EXAMPLES}]
    for e in EXAMPLES:
        if e.name not in found:
            problems.append(f"README lacks the example {e.name!r} ({e.command})")
            continue
        if e.cpu_torch_only and _torch_cuda_build():
            print(f"example {e.name!r} not compared: it describes the installed torch, a CUDA build here "
                  "(the README shows the CPU build the set-up command installs)", file=sys.stderr)
            continue
        fresh, old = stable(run(e)), stable(found[e.name])
        if fresh != old:
            problems.append(f"example {e.name!r} is stale:\n  README: {old}\n  now:    {fresh}")
    return problems


def _torch_cuda_build() -> bool:
    probe = "import torch; print(torch.version.cuda is not None)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300).stdout.strip() == "True"


def regenerate(text: str) -> str:
    by_name = {e.name: e for e in EXAMPLES}
    cuda_build = _torch_cuda_build()

    def replace(m: "re.Match[str]") -> str:
        e = by_name.get(m.group("name"))
        if e is None:
            raise SystemExit(f"README has an unknown example {m.group('name')!r}")
        if e.cpu_torch_only and cuda_build:
            print(f"example {e.name!r} kept: it describes the installed torch, a CUDA build here", file=sys.stderr)
            return m.group(0)
        return f"<!-- example: {e.name} -->\n```console\n{run(e)}```\n<!-- end example -->"

    return _BLOCK.sub(replace, text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of rewriting; exit 1 if stale")
    args = ap.parse_args()
    text = README.read_text(encoding="utf-8")
    if args.check:
        problems = check(text)
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(f"run: python {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
        return 1 if problems else 0
    new = regenerate(text)
    missing = [e.name for e in EXAMPLES if e.name not in blocks(new)]
    if missing:
        print(f"warning: README has no block for {', '.join(missing)}", file=sys.stderr)
    if new != text:
        from ascend_compat._files import write_text_atomic

        write_text_atomic(README, new)
        print(f"updated {README.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
