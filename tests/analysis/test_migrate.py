"""migrate: rewrites only what is used as a device/backend, is idempotent, writes atomically and
only where it was told to, handles notebooks and unparsable files, and its output runs."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

pytest.importorskip("libcst", reason="migrate needs the optional dependency libcst")

from ascend_compat.analysis.migrate import MigrateError, migrate_source  # noqa: E402
from ascend_compat.analysis.migrate.apply import MigrateUsageError, migrate_paths  # noqa: E402

from analysis_helpers import CORPUS, SCRIPTS  # noqa: E402


def _read(p):
    with open(p, encoding="utf-8") as fh:
        return fh.read()


def test_traps_are_untouched():
    src = _read(os.path.join(CORPUS, "traps.py"))
    r = migrate_source(src)
    assert r.code == src and r.changes == []


def test_setup_py_path_join_is_not_rewritten():
    src = _read(os.path.join(CORPUS, "setup.py"))
    r = migrate_source(src, annotate=True)
    assert 'os.path.join(src_dir, "cuda")' in r.code
    assert "# TODO(ascend-compat): [cuda-extension]" in r.code


def test_aliases_rewrite_and_idempotence():
    src = _read(os.path.join(CORPUS, "aliases.py"))
    r = migrate_source(src, annotate=True)
    code = r.code
    assert "import torch_npu.npu as tc" in code and "from torch_npu import npu as cuda" in code
    assert "from torch_npu.npu.amp import autocast, GradScaler as Scaler" in code
    assert 'f"npu:{rank}"' in code and '"npu:{}".format(rank)' in code and '"npu:%d" % rank' in code
    assert 'self.loc = "npu:1"' in code and 'bk = "hccl"' in code and 'dev_name = "cpu"' in code
    assert code.count("import torch_npu\n") == 1
    again = migrate_source(code, annotate=True)
    assert again.code == code and again.changes == []
    compile(code, "aliases.py", "exec")


def test_remaining_lists_what_was_not_rewritten():
    r = migrate_source(_read(os.path.join(CORPUS, "rules.py")))
    left = {f.rule for f in r.remaining}
    assert {"reduce-op-avg", "data-parallel", "cuda-extension", "nvidia-smi", "float64"} <= left
    assert "cuda-method" not in left and "device-string" not in left


def test_unknown_torch_cuda_names_are_not_rewritten():
    r = migrate_source("import torch\ntorch.cuda.memory_usage()\ntorch.cuda.synchronize()\n")
    assert "torch.cuda.memory_usage()" in r.code and "torch.npu.synchronize()" in r.code


def test_suppressed_lines_are_not_rewritten():
    src = _read(os.path.join(CORPUS, "suppressed.py"))
    code = migrate_source(src).code
    assert "x = torch.zeros(1).cuda()  # ascend-compat: ignore[cuda-method]" in code
    assert 'y = torch.zeros(1).to("cuda")' in code and "z = torch.zeros(1).npu()" in code


def test_unparsable_source_raises_and_paths_leave_it_untouched(tmp_path):
    with pytest.raises(MigrateError):
        migrate_source("def f(:\n  x.cuda()\n")
    bad = tmp_path / "bad.py"
    shutil.copy(os.path.join(CORPUS, "syntax_error.py"), bad)
    before = bad.read_bytes()
    out, = migrate_paths([str(bad)], write=True)
    assert out.error and "parse" in out.error and bad.read_bytes() == before


def test_write_in_place_is_atomic_and_keeps_mode(tmp_path):
    p = tmp_path / "train.py"
    shutil.copy(os.path.join(SCRIPTS, "timing_events.py"), p)
    p.chmod(0o751)
    out, = migrate_paths([str(tmp_path)], write=True)
    assert out.changed and out.written_to == str(p)
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert sorted(os.listdir(tmp_path)) == ["train.py"]  # no temp file left
    assert "torch.npu.synchronize()" in p.read_text()
    again, = migrate_paths([str(tmp_path)], write=True)
    assert not again.changed


def test_output_dir_copy_and_refusals(tmp_path):
    src = tmp_path / "proj"
    shutil.copytree(CORPUS, src)
    before = {f: (src / f).read_bytes() for f in os.listdir(src)}
    dest = tmp_path / "out"
    outs = migrate_paths([str(src)], output_dir=str(dest))
    assert {f: (src / f).read_bytes() for f in os.listdir(src)} == before  # inputs untouched
    copied = sorted(os.listdir(dest / "proj"))
    assert copied == sorted(before)  # complete copy, unparsable and non-Python files included
    assert all(o.written_to is None or o.written_to.startswith(str(dest)) for o in outs)
    assert "npu" in (dest / "proj" / "aliases.py").read_text()
    with pytest.raises(MigrateUsageError):
        migrate_paths([str(src)], output_dir=str(src / "migrated"))
    migrate_paths([str(src)], output_dir=str(src / "migrated"), exclude=["migrated/"])
    assert (src / "migrated" / "proj" / "aliases.py").exists()


def test_notebook_cells_rewritten_outputs_kept(tmp_path):
    nb = tmp_path / "nb.ipynb"
    shutil.copy(os.path.join(CORPUS, "notebook.ipynb"), nb)
    out, = migrate_paths([str(nb)], write=True)
    data = json.loads(nb.read_text())
    cells = data["cells"]
    assert "".join(cells[1]["source"]) == 'import torch\nimport torch_npu\ndevice = "npu"\nx = torch.ones(2).to(device)\n'
    assert cells[1]["outputs"][0]["text"] == ["cuda output kept\n"]
    assert "".join(cells[4]["source"]).startswith('z = torch.zeros(1, device="npu:0")')
    assert "!nvidia-smi" in "".join(cells[2]["source"])  # magic cell listed, not rewritten
    assert data["metadata"]["kernelspec"]["name"] == "python3"
    assert [c.cell for c in out.changes if c.rule != "import"] == [2, 5]


def test_cli_dry_run_diff_and_changes_file(tmp_path):
    p = tmp_path / "t.py"
    shutil.copy(os.path.join(SCRIPTS, "ddp_nccl.py"), p)
    before = p.read_text()
    changes = tmp_path / "changes.csv"
    r = subprocess.run([sys.executable, "-m", "ascend_compat", "migrate", str(p), "--changes", str(changes)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and p.read_text() == before
    assert '-    dist.init_process_group(backend="nccl"' in r.stdout and '+    dist.init_process_group(backend="hccl"' in r.stdout
    rows = changes.read_text().splitlines()
    assert rows[0] == "path,cell,line,rule,before,after" and len(rows) > 3
    applied = subprocess.run(["patch", "-p1", "--dry-run", "-d", "/"], input=r.stdout.replace(f"a/{p}", f"a{p}")
                             .replace(f"b/{p}", f"b{p}"), capture_output=True, text=True) if shutil.which("patch") else None
    if applied is not None:
        assert applied.returncode == 0, applied.stdout + applied.stderr


def test_cli_reports_missing_libcst():
    code = ("import sys; sys.modules['libcst'] = None\n"
            "from ascend_compat.cli import main; sys.exit(main(['migrate', '.']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 4 and "pip install 'libcst>=1.1'" in r.stderr  # a base dependency: broken install


RUNNER = ("import sys, runpy\n"
          "from ascend_compat import simulator\n"
          "simulator.install()\n"
          "runpy.run_path(sys.argv[1], run_name='__main__')\n")


@pytest.mark.parametrize("script", ["mnist_cuda.py", "ddp_nccl.py", "timing_events.py"])
def test_migrated_script_runs_on_simulated_npu_without_shim(script, tmp_path):
    migrate_paths([os.path.join(SCRIPTS, script)], output_dir=str(tmp_path))
    migrated = tmp_path / script
    code = migrated.read_text()
    assert "import torch_npu" in code and "cuda:" not in code.replace("cuda or cpu", "")
    env = dict(os.environ, ASCEND_COMPAT_NO_PATCH="1")
    env.pop("ASCEND_COMPAT_SIMULATE", None)
    r = subprocess.run([sys.executable, "-c", RUNNER, str(migrated)], capture_output=True, text=True,
                       env=env, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "device npu" in r.stdout


def test_flash_attn_import_goes_to_the_drop_in():
    r = migrate_source(_read(os.path.join(SCRIPTS, "llm_finetune.py")), annotate=True)
    assert "from ascend_compat.ecosystem.dropins.flash_attn import flash_attn_func" in r.code
    assert 'dist.init_process_group(backend="hccl")' in r.code and 'torch.device("npu", local_rank)' in r.code
    assert "# TODO(ascend-compat): [reduce-op-avg]" in r.code
    assert {f.rule for f in r.remaining} >= {"float64", "reduce-op-avg", "compile-cuda-graphs"}


def test_capability_queries_are_listed_not_rewritten():
    r = migrate_source("import torch\nmajor, minor = torch.cuda.get_device_capability()\n")
    assert "torch.cuda.get_device_capability()" in r.code
    assert [f.rule for f in r.remaining] == ["device-capability"]


def test_every_auto_environment_variable_is_renamed_or_left_to_the_shim_for_a_stated_reason():
    from ascend_compat.knowledge import env_vars
    from ascend_compat.knowledge.records import AUTO

    for r in env_vars.RECORDS:
        if r.verdict == AUTO:
            assert (r.rewrite is not None) != (r.left_to_shim is not None), r.name
    src = ('import os\nos.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"\n'
           'os.environ["CUDA_LAUNCH_BLOCKING"] = "1"\nos.environ.setdefault("NCCL_SOCKET_IFNAME", "eth0")\n'
           'os.environ["NCCL_BUFFSIZE"] = "4194304"\n')
    out = migrate_source(src).code
    assert "PYTORCH_NPU_ALLOC_CONF" in out and "ASCEND_LAUNCH_BLOCKING" in out and "HCCL_SOCKET_IFNAME" in out
    assert '"NCCL_BUFFSIZE"' in out  # the shim converts bytes to MB: renaming would hand HCCL the wrong unit
    assert "import torch_npu" not in out


def test_import_torch_npu_only_where_the_rewritten_code_needs_it():
    compare = "import torch\ndef on_gpu(x, backend):\n    return x.device.type == 'cuda' or backend == 'nccl'\n"
    assert "import torch_npu" not in migrate_source(compare).code
    device = "import torch\ndef move(x):\n    return x.to('cuda')\n"
    assert "import torch_npu" in migrate_source(device).code
    group = "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
    assert "import torch_npu" in migrate_source(group).code
