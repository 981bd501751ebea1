"""Which files a job's logs are, and what each one is: a CANN plog, a torchrun per-rank stdout/stderr,
or any other text log (a launcher's output, a console capture), and which node it belongs to.

Given directories and files, :func:`discover` walks the directories (symbolic links are not
followed, hidden directories are skipped) and returns :class:`Source` records. A file's node is the
first directory under the given root when that root holds several node directories (the layout
``ascend-fd`` expects and ``run --simulate --nodes`` writes: one directory per node), else the
directory's own name when several directories are given (one per node), else None.
torchrun's per-rank files are ``.../attempt_<n>/<local_rank>/{stdout,stderr}.log``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, List, Optional

from ascend_compat.errors.plog import is_plog_name

PLOG, RANK_LOG, TEXT = "plog", "rank", "text"
_TEXT_EXT = (".log", ".txt", ".out", ".err", ".json", "")
_ATTEMPT = re.compile(r"^attempt_\d+$")
#: at most this many files are read (a directory of millions of files is refused by the caller)
MAX_FILES = 100_000


@dataclass(frozen=True)
class Source:
    path: str
    kind: str  # PLOG, RANK_LOG, TEXT
    node: Optional[str] = None
    pid: Optional[int] = None  # plogs
    local_rank: Optional[int] = None  # torchrun per-rank logs


def classify(path: str, node: Optional[str] = None) -> Optional[Source]:
    """The :class:`Source` for one file, None for a file that is not a text log."""
    name = os.path.basename(path)
    pid = is_plog_name(name)
    if pid is not None:
        return Source(path, PLOG, node, pid=pid)
    parts = os.path.normpath(path).split(os.sep)
    if name in ("stdout.log", "stderr.log") and len(parts) >= 3 and _ATTEMPT.match(parts[-3]) and parts[-2].isdigit():
        return Source(path, RANK_LOG, node, local_rank=int(parts[-2]))
    if name == "error.json" and len(parts) >= 3 and _ATTEMPT.match(parts[-3]):
        return Source(path, TEXT, node, local_rank=int(parts[-2]) if parts[-2].isdigit() else None)
    if os.path.splitext(name)[1].lower() in _TEXT_EXT and not name.startswith("."):
        return Source(path, TEXT, node)
    return None


def _walk(root: str) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


#: directory names of one node's own log layout (CANN, torchrun), never node names
_LAYOUT = {"process_log", "torchrun", "debug", "run", "plog", "log", "ascend", "security", "atrace"}


def _node_dirs(root: str) -> List[str]:
    """Top-level directories of ``root`` that hold files and are not part of one node's log layout."""
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    return [e for e in entries if not e.startswith(".") and e.lower() not in _LAYOUT
            and not _ATTEMPT.match(e) and os.path.isdir(os.path.join(root, e))
            and any(True for _ in _walk(os.path.join(root, e)))]


def discover(paths: Iterable[str]) -> List[Source]:
    """Every log file among ``paths`` (files and directories). OSError for a path that does not exist."""
    out: List[Source] = []
    paths = list(paths)
    for path in paths:
        if os.path.isdir(path):
            per_node = len(_node_dirs(path)) > 1
            own = os.path.basename(os.path.normpath(os.path.abspath(path))) if len(paths) > 1 else None
            for file in _walk(path):
                rel = os.path.relpath(file, path).split(os.sep)
                node = rel[0] if per_node and len(rel) > 1 else own
                source = classify(file, node)
                if source is not None:
                    out.append(source)
                if len(out) > MAX_FILES:
                    raise OSError(f"{path} holds more than {MAX_FILES} log files; pass the job's own log directory")
        elif os.path.isfile(path):
            out.append(classify(path) or Source(path, TEXT))
        elif os.path.exists(path):
            raise OSError(f"{path} is neither a directory nor a regular file")
        else:
            raise FileNotFoundError(path)
    return out
