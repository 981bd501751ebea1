"""The shim's torch.cuda table agrees with the generated torch_npu facts, and the docs are current."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

from ascend_compat.cuda_shim.mapping import cuda_names as table
from shim_helpers import REPO


def test_table_agrees_with_torch_npu_api_facts():
    from ascend_compat import data

    facts = data.cuda_api_map()
    problems = []
    for name in getattr(torch.cuda, "__all__", []):
        fact, mine = facts.get(name), table.status(name)
        if fact is None or mine is None:
            continue
        if fact["status"] in ("mapped", "renamed") and mine.action == table.UNSUPPORTED:
            problems.append(f"{name}: torch_npu has {fact['npu_name']} but we call it unsupported")
        if fact["status"] == "unsupported" and mine.action == table.MAP:
            problems.append(f"{name}: we map it but torch_npu has no counterpart")
        if mine.action == table.MAP and fact["status"] in ("mapped", "renamed") and mine.npu_name != fact["npu_name"]:
            problems.append(f"{name}: we map to {mine.npu_name}, torch_npu calls it {fact['npu_name']}")
    assert problems == []


def test_docs_table_is_current():
    doc = (REPO / "docs" / "torch_cuda_names.md").read_text(encoding="utf-8")
    version = re.search(r"torch (\d+\.\d+\.\d+)'s", doc).group(1)
    if torch.__version__.split("+")[0] != version:
        pytest.skip(f"docs were generated for torch {version}; installed is {torch.__version__}")
    proc = subprocess.run([sys.executable, "tools/gen_shim_cuda_table.py", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_record_has_a_valid_action_and_texts():
    for name, rec in table.CUDA_NAMES.items():
        assert rec.name == name and rec.action in (table.MAP, table.EMULATE, table.UNSUPPORTED, table.KEEP), name
        assert rec.reason and rec.advice, name
        if rec.action == table.MAP:
            assert rec.npu_name is not None and rec.rewrite == (f"torch.cuda.{name}", rec.counterpart), name
