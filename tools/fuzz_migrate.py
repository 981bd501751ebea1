"""Fuzz ``ascend-compat migrate``: generated programs (hypothesmith) and mutations of real files.

Usage: ``python tools/fuzz_migrate.py [--cases N] [--seconds S] [--seed K] [--corpus DIR ...]``

Each case is written to a temporary file and migrated in place twice with
:func:`ascend_compat.analysis.migrate.apply.migrate_paths`. Counted per case:

* traceback: migrate raised (a file it cannot handle must come back with ``error`` set);
* hang: the two migrate calls of a case took longer than ``--per-case`` seconds (SIGALRM, and the
  elapsed time checked afterwards);
* non-idempotent: the second run changed the file again;
* outside change: the output differs from the input anywhere but in the rewrites migrate reported
  (each changed line must be a reported change's line, rewritten from CUDA to NPU words, plus the
  inserted ``import torch_npu``), or the encoding/BOM/line endings changed;
* error: migrate left the file untouched with a reason (counted, not a failure).

Case sources: hypothesmith's grammar- and libcst-based program generators with CUDA statements
spliced in (so rewrites happen), and mutations of real Python files (the project's own CUDA
scripts and examples, and the files under each ``--corpus`` directory): encodings with a coding
cookie, BOM, CRLF, form feeds, comments, tabs, blank-line noise, deleted/duplicated lines.
Prints the counts, and one line per failing case (its text is kept under ``--keep DIR``).
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: CUDA statements spliced into generated programs (one per line, module level)
SNIPPETS = (
    "import torch\n", "x = y.cuda()\n", 'd = torch.device("cuda:0")\n', "z = w.to('cuda')\n",
    "torch.cuda.synchronize()\n", "if t.is_cuda:\n    pass\n", 'dist.init_process_group(backend="nccl")\n',
    'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n', "torch.backends.cudnn.benchmark = True\n",
    "torch.backends.cuda.matmul.allow_tf32 = True\n", "from torch.cuda.amp import autocast\n",
    "import torch.cuda as tc\n", "s = torch.cuda.Stream()\n", 'm = torch.load(p, map_location="cuda")\n',
    'dev = f"cuda:{rank}"\n', "from flash_attn import flash_attn_func\n", "q = a.double()\n",
)
REWRITE_WORDS = ("npu", "NPU", "hccl", "HCCL", "ASCEND", "ascend_compat")


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


# ------------------------------------------------------------------ case generation
def _real_files(corpus_dirs):
    files = sorted((REPO / "tests" / "scripts").glob("*.py")) + sorted((REPO / "examples").glob("*.py"))
    files += sorted((REPO / "tests" / "analysis" / "fixtures").rglob("*.py"))
    for d in corpus_dirs:
        files += sorted(Path(d).rglob("*.py"))
    out = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if 0 < len(text) < 200_000:
            out.append((f.name, text))
    return out


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """(text, encoding) of a random mutation of ``text``."""
    lines = text.splitlines(keepends=True) or ["\n"]
    encoding = "utf-8"
    for _ in range(rng.randint(1, 4)):
        k = rng.randrange(12)
        i = rng.randrange(len(lines) + 1)
        if k == 0:
            lines.insert(i, "\x0c\n")
        elif k == 1:
            lines.insert(i, "    # comment with cuda and nccl in it\n" if rng.random() < .5 else "# é ü comment\n")
        elif k == 2 and lines:
            del lines[min(i, len(lines) - 1)]
        elif k == 3 and lines:
            j = min(i, len(lines) - 1)
            lines.insert(j, lines[j])
        elif k == 4:
            lines.insert(i, rng.choice(SNIPPETS))
        elif k == 5:
            lines = [ln.replace("    ", "\t") for ln in lines]
        elif k == 6:
            lines = [ln.rstrip("\n") + "   \n" if ln.endswith("\n") else ln for ln in lines]
        elif k == 7:
            lines.insert(i, "\n\n\n")
        elif k == 8:
            lines.insert(i, "x = (" * 30 + "1" + ")" * 30 + "\n")
        elif k == 9:
            lines.insert(i, 's = "cuda" \\\n    "x"\n')
        elif k == 10:
            lines.insert(i, "caf\u00e9 = 'cuda'  # non-ASCII identifier\n")
        else:
            lines.insert(i, "def f(device='cuda:1'):\n    return device\n")
    out = "".join(lines)
    r = rng.random()
    if r < .15:
        encoding = "latin-1"
        out = "# -*- coding: latin-1 -*-\n" + out
    elif r < .25:
        out = "\ufeff" + out
    if rng.random() < .2:
        out = out.replace("\r\n", "\n").replace("\n", "\r\n")
    return out, encoding


def generated(rng: random.Random, n: int):
    """``n`` programs from hypothesmith, each with CUDA statements spliced in between statements."""
    import warnings

    import hypothesmith
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import NonInteractiveExampleWarning

    out = []
    strategies = [hypothesmith.from_grammar(), hypothesmith.from_node()]

    for k in range(n):
        strategy = strategies[k % 2]
        box = []

        @settings(max_examples=1, database=None, deadline=None, derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(src):
            box.append(src)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NonInteractiveExampleWarning)
            try:
                draw()
            except Exception:
                continue
        if not box:
            continue
        src = box[0]
        if not src.endswith("\n"):
            src += "\n"
        lines = src.splitlines(keepends=True)
        for _ in range(rng.randint(1, 3)):
            # splice at a line that starts a top-level statement, so the program stays valid
            starts = [i for i, ln in enumerate(lines) if ln[:1] not in (" ", "\t", "\n", "#", ")", "]", "}")]
            i = rng.choice(starts + [len(lines)])
            lines.insert(i, rng.choice(SNIPPETS))
        out.append(("".join(lines), "utf-8"))
    return out


# ------------------------------------------------------------------ one case
def _outside_change(before: bytes, after: bytes, encoding: str, outcome) -> str:
    """Why ``after`` changes ``before`` beyond the reported rewrites ('' = it does not)."""
    if before.startswith(b"\xef\xbb\xbf") != after.startswith(b"\xef\xbb\xbf"):
        return "BOM changed"
    if (b"\r\n" in before and before.count(b"\n") == before.count(b"\r\n")) and \
            after.count(b"\n") != after.count(b"\r\n"):
        return "CRLF line endings changed"
    try:
        # lines as migrate counts them: \n-separated (str.splitlines also splits at \f and others)
        old = before.decode(encoding).replace("\r\n", "\n").split("\n")
        new = after.decode(encoding).replace("\r\n", "\n").split("\n")
    except UnicodeDecodeError:
        return "encoding changed"
    ins = [c.line for c in outcome.changes if c.after == "import torch_npu" and not c.before]
    for ln in sorted(ins, reverse=True):  # drop the inserted import: the rest must align line by line
        if not (0 < ln <= len(new) and new[ln - 1].strip() == "import torch_npu"):
            return f"import torch_npu reported at line {ln} but not there"
        del new[ln - 1]
    if len(new) != len(old):
        return f"{len(old)} lines became {len(new)}"
    lines = {c.line for c in outcome.changes}
    for k, (a, b) in enumerate(zip(old, new), 1):
        if a == b:
            continue
        if k not in lines:
            return f"line {k} changed without a reported change: {a!r} -> {b!r}"
        if not any(w in a.lower() for w in ("cud", "nccl", "flash_attn", "tf32")):
            return f"line {k} without a CUDA word changed: {a!r}"
        if not any(w in b for w in REWRITE_WORDS):
            return f"line {k} rewritten without an NPU word: {b!r}"
    return ""


def run_case(path: str, data: bytes, encoding: str, per_case: float):
    """('ok'|'error'|'traceback'|'hang'|'nonidempotent'|'outside', detail)."""
    from ascend_compat.analysis.migrate.apply import migrate_paths

    with open(path, "wb") as fh:
        fh.write(data)
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, per_case)
        first = migrate_paths([path], write=True)[0]
        once = Path(path).read_bytes()
        second = migrate_paths([path], write=True)[0]
        twice = Path(path).read_bytes()
    except Hang:
        return "hang", ""
    except Exception:
        return "traceback", traceback.format_exc(limit=-3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if time.monotonic() - t0 > per_case:  # the alarm can be swallowed (raised inside a gc callback)
        return "hang", f"{time.monotonic() - t0:.0f} s"
    if first.error:
        return ("nonidempotent", "file changed although migrate reported an error") if once != data \
            else ("error", first.error)
    if twice != once or second.changed:
        return "nonidempotent", ""
    if first.changed:
        why = _outside_change(data, once, encoding, first)
        if why:
            return "outside", why
    return "ok", ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", type=int, default=3000, help="total cases (default 3000)")
    ap.add_argument("--seconds", type=float, default=600, help="stop after this many seconds (default 600)")
    ap.add_argument("--per-case", type=float, default=20, help="a migrate call longer than this is a hang")
    ap.add_argument("--generated-share", type=float, default=0.4, help="share of hypothesmith cases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", action="append", default=[], help="more real files to mutate (a directory)")
    ap.add_argument("--keep", help="write failing cases into this directory")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    reals = _real_files(a.corpus)
    if not reals:
        sys.exit("no real files to mutate")
    n_gen = int(a.cases * a.generated_share)
    t0 = time.monotonic()
    counts = {k: 0 for k in ("ok", "error", "traceback", "hang", "nonidempotent", "outside")}
    by_source = {"generated": 0, "mutated": 0}
    failures = []
    gen = generated(rng, n_gen) if n_gen else []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.cases):
            if time.monotonic() - t0 > a.seconds:
                break
            if k < len(gen):
                text, enc = gen[k]
                source = "generated"
            else:
                name, base = rng.choice(reals)
                text, enc = mutate(base, rng)
                source = "mutated"
            try:
                data = text.encode(enc)
            except UnicodeEncodeError:
                text, enc = text.replace("# -*- coding: latin-1 -*-\n", ""), "utf-8"
                data = text.encode(enc)
            path = os.path.join(tmp, f"case{k}.py")
            kind, detail = run_case(path, data, enc, a.per_case)
            counts[kind] += 1
            by_source[source] += 1
            if kind not in ("ok", "error"):
                failures.append((k, source, kind, detail))
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    Path(a.keep, f"case{k}.py").write_bytes(data)
    total = sum(counts.values())
    print(f"cases {total} (generated {by_source['generated']}, mutated real files {by_source['mutated']}) "
          f"in {time.monotonic() - t0:.0f} s")
    print("  ".join(f"{k} {v}" for k, v in counts.items()))
    for k, source, kind, detail in failures[:40]:
        print(f"FAIL case{k} ({source}): {kind} {detail.strip().splitlines()[-1] if detail.strip() else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
