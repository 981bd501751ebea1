"""Terminal output for the commands: colour, width-aware tables, progress (rich, imported lazily).

Colour follows rich's rules: only on a terminal; ``NO_COLOR`` (any value) turns it off and
``FORCE_COLOR`` turns it on even in a pipe. Progress goes to stderr only, so standard output stays
the report. Nothing here is imported by ``import ascend_compat``; rich is imported on first use.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Callable, Iterator, Optional

PROG = "ascend-compat"
_STYLES = {"error": "bold red", "warning": "yellow", "note": "cyan"}


def color_wanted(stream) -> bool:
    """Whether output to ``stream`` should be coloured (NO_COLOR > FORCE_COLOR > is a terminal)."""
    if os.environ.get("NO_COLOR", "") != "":
        return False
    if os.environ.get("FORCE_COLOR", "") != "":
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console(stream=None):
    """A rich Console on ``stream`` (default stdout) that honours NO_COLOR / FORCE_COLOR."""
    from rich.console import Console

    stream = stream or sys.stdout
    colour = color_wanted(stream)
    return Console(file=stream, force_terminal=colour, no_color=not colour, highlight=False,
                   soft_wrap=False, emoji=False)


def message(kind: str, text: str, prog: str = PROG) -> None:
    """``prog: kind: text`` on stderr, the kind coloured on a terminal; ``prog: text`` when ``prog`` already
    ends with the kind (``ascend-compat error: ...``, not ``ascend-compat error: error: ...``)."""
    head = prog[:-len(kind)] if prog.endswith(f" {kind}") else f"{prog}: "
    if color_wanted(sys.stderr):
        from rich.markup import escape

        console(sys.stderr).print(f"{escape(head)}[{_STYLES.get(kind, 'bold')}]{kind}[/]: {escape(text)}",
                                  soft_wrap=True)
    else:
        sys.stderr.write(f"{head}{kind}: {text}\n")
        sys.stderr.flush()


_HANG = re.compile(r"^(\s*(?:[\w ]+:\s+)?(?:- )?)")


def write_report(text: str, stream=None) -> None:
    """Write a plain-text report; on a terminal, long lines wrap to its width with a hanging indent
    (continuations line up under the text after ``label:`` and ``- ``) and block headers are bold."""
    stream = stream or sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty and not os.environ.get("FORCE_COLOR"):
        stream.write(text)
        stream.flush()
        return
    import shutil
    import textwrap

    out = console(stream)
    width = out.width or shutil.get_terminal_size().columns
    from rich.text import Text

    for line in text.rstrip("\n").split("\n"):
        prefix = _HANG.match(line).group(1)
        wrapped = textwrap.fill(line, width=max(width, 40), subsequent_indent=" " * len(prefix),
                                break_long_words=False, break_on_hyphens=False) if len(line) > width else line
        styled = Text(wrapped, style="bold" if line and not line[0].isspace() else "")
        out.print(styled, soft_wrap=True)


@contextlib.contextmanager
def progress(description: str, unit: str, enabled: bool, total: Optional[float] = None
             ) -> Iterator[Callable[..., None]]:
    """A progress bar on stderr with rate and ETA; yields ``update(done, total=None, description=None)``.

    Disabled (``enabled=False``) it yields a function that does nothing and imports nothing.
    ``unit="bytes"`` shows sizes and transfer speed; any other unit is a count ("files", "steps").
    """
    if not enabled:
        yield lambda done, total=None, description=None: None
        return
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, ProgressColumn,
                               TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
                               TransferSpeedColumn)
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} {unit}/s" if speed else f"? {unit}/s", style="progress.data.speed")

    if unit == "bytes":
        columns = [DownloadColumn(), TransferSpeedColumn()]
    else:
        columns = [MofNCompleteColumn(), TextColumn(unit), RateColumn()]
    from rich.console import Console

    colour = color_wanted(sys.stderr)  # enabled means wanted: drawn even when stderr is not a terminal
    err = Console(file=sys.stderr, force_terminal=True, no_color=not colour, highlight=False, emoji=False)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), *columns,
                   TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                   console=err, transient=True, redirect_stdout=False, redirect_stderr=False)
    task = bar.add_task(description, total=total)

    def update(done: float, new_total: Optional[float] = None, description: Optional[str] = None) -> None:
        changes = {"completed": done}
        if new_total is not None:
            changes["total"] = new_total
        if description is not None:
            changes["description"] = description
        bar.update(task, **changes)

    with bar:
        yield update


@contextlib.contextmanager
def steps(description: str, names: tuple, enabled: bool) -> Iterator[Callable[[str], None]]:
    """Progress over named start-up steps; yields ``step(name)`` to call as each one begins."""
    with progress(description, "steps", enabled, total=len(names)) as update:
        done = {"n": 0}

        def step(name: str) -> None:
            update(done["n"], description=f"{description}: {name}")
            done["n"] += 1

        yield step
        update(len(names))
