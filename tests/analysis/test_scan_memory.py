"""check on large files: analysed window by window (analysis/stream.py), with the findings of a whole-file
analysis, and memory that follows the window, not the file (the bound is in docs/check_and_migrate.md)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ascend_compat.analysis import project, scan, stream
from ascend_compat.analysis.visitor import PyAnalyzer, suppressions
from subproc import REPO, clean_env

from test_scan_robustness import _torch_files


def _full(path: str, text: str):
    an = PyAnalyzer(path, text, module_name=project.module_name(path))  # relative imports resolved, as scan does
    an.feed(scan._parse(text, path))
    supp = suppressions(text)
    return [f.to_dict() for f in an.finish() if not scan._suppressed(f, supp)]


def assert_as_whole_file(path: str) -> None:
    """scan_file gives ``path`` the findings of a whole-file analysis, and no error."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    r = scan.scan_file(path)
    assert r.error is None and [f.to_dict() for f in r.findings] == _full(path, text)


@pytest.fixture
def tiny_windows(monkeypatch):
    """Every file streamed, in windows of 300 bytes (classes over that split into members)."""
    monkeypatch.setattr(stream, "STREAM_BYTES", 0)
    monkeypatch.setattr(stream, "WINDOW_BYTES", 300)


@pytest.mark.parametrize("path", _torch_files(40))
def test_windows_give_the_findings_of_a_whole_file_analysis(path, tiny_windows):
    assert_as_whole_file(path)


_AWKWARD = '''import torch
x = [
"cuda",
]
s = """
dev = "cuda"
"""
classification = [
    torch.zeros(1).cuda(),
]
class Model:
    """doc
at column 0"""
    def forward(self, x):
        return x.cuda()
    values = {
    "a": 1,
    }
    def to(self):
        return torch.device("cuda")
y = torch.ones(1) \\
.cuda()
if True:
    z = torch.zeros(1).cuda()
else:
    z = None
'''


def test_boundaries_that_are_none_are_widened_over(tiny_windows, tmp_path):
    """Lines at column 0 inside brackets, strings and continuations, and a name starting with
    "class": the windows are widened until they parse, so nothing is lost or reported twice."""
    f = tmp_path / "awkward.py"
    f.write_text(_AWKWARD)
    r = scan.scan_file(str(f))
    assert r.error is None and [x.to_dict() for x in r.findings] == _full(str(f), _AWKWARD)
    assert len(r.findings) >= 5


def test_a_syntax_error_or_an_oversized_statement_costs_only_itself(tiny_windows, monkeypatch, tmp_path):
    """In a streamed file a broken line is blanked within its window (as for small files) and a
    statement over MAX_STATEMENT_BYTES is skipped with a message; the rest is analysed."""
    once = tmp_path / "awkward.py"
    once.write_text(_AWKWARD)
    f = tmp_path / "broken.py"
    f.write_text(_AWKWARD + "def broken(:\n    pass\n" + _AWKWARD.replace("import torch\n", ""))
    r = scan.scan_file(str(f))
    assert r.error_kind == "parse-error" and r.error.startswith("syntax error at line 27")
    assert len(r.findings) == 2 * len(scan.scan_file(str(once)).findings)
    monkeypatch.setattr(stream, "MAX_STATEMENT_BYTES", 400)
    big = tmp_path / "big.py"
    big.write_text("import torch\na = torch.zeros(1).cuda()\ndata = [\n" + '    "cuda",\n' * 100 + "]\n"
                   "b = torch.zeros(1).cuda()\n")
    r = scan.scan_file(str(big))
    assert r.error_kind == "too-complex" and r.error.startswith("the statement at line 3 is 1.2 KB, over the 0.4 KB")
    assert [x.line for x in r.findings] == [2, 105]


_MEASURE = textwrap.dedent("""
    import resource, subprocess, sys
    proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    print(proc.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.stderr[-500:].replace("\\n", " "))
""")


#: a training step where every line is CUDA (19 findings per KB: a million findings in 50 MB)
_DENSE = textwrap.dedent('''
    def train(model, loader, opt):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = model.cuda()
        scaler = torch.cuda.amp.GradScaler()
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.to("cuda")
            with torch.cuda.amp.autocast():
                loss = model(x).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            torch.cuda.synchronize()
        dist.init_process_group("nccl")
        return torch.cuda.max_memory_allocated()
''')


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["real-code", "every-line-cuda"])
def test_check_on_a_50_MB_file_stays_under_1_GB(tmp_path, kind):
    """50 MB of real CUDA training code (every line a candidate, 140,000 findings), and 50 MB of a training
    step where every line is CUDA (a million findings: the report was 2.9 GB before it was written in
    pieces): peak RSS of the check process, measured by its parent. Before, 9 MB peaked at 1.3 GB and 50 MB
    passed 8 GB."""
    if kind == "real-code":
        sources = sorted((REPO / "tests" / "scripts").glob("*.py")) + sorted((REPO / "examples").glob("*.py"))
        unit = "".join(p.read_text(encoding="utf-8") + "\n" for p in sources)
    else:
        unit = "import torch\nimport torch.distributed as dist\n" + _DENSE
    big = tmp_path / "big.py"
    with open(big, "w", encoding="utf-8") as fh:
        for _ in range((50 << 20) // len(unit) + 1):
            fh.write(unit)
    cmd = [sys.executable, "-m", "ascend_compat", "check", "--max-file-size", "100", "--format", "json", str(big)]
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, timeout=1800,
                          env=clean_env(NO_COLOR="1"))
    code, peak_kb, err = proc.stdout.split(" ", 2)
    assert code == "0", err
    assert int(peak_kb) < 1 << 20, f"peak RSS {int(peak_kb) >> 10} MB"


def test_an_analysed_file_leaves_no_garbage_for_the_cyclic_collector(tmp_path):
    """Everything a file's analysis builds is freed by reference counting when the file is done: the cyclic
    collector walking it (an analyzer holding bound methods of itself) cost 0.2 cpu-s on the torch tree."""
    import gc

    f = tmp_path / "m.py"
    f.write_text("import torch\nfrom torch.cuda import amp\n\n\ndef step(x, scaler):\n    with amp.autocast():\n"
                 "        y = x.cuda().double()\n    return y\n\n\n" + "\n".join(f"v{i} = {i}" for i in range(300)) + "\n")
    scan.scan_file(str(f))
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        r = scan.scan_file(str(f))
        assert len(r.findings) >= 3
        del r
        assert gc.collect() == 0
    finally:
        if collecting:
            gc.enable()
