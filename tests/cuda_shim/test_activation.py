"""Activation: import-time decision, no-op without a backend, idempotent/thread-safe, exact undo."""
from __future__ import annotations

import threading

import pytest
import torch

import ascend_compat
from ascend_compat import cuda_shim
from ascend_compat.cuda_shim import registry
from ascend_compat.cuda_shim.registry import Patch
from shim_helpers import run_python

_MISSING = object()


def test_without_any_backend_import_changes_nothing():
    proc = run_python("""
        import os, sys, warnings, torch, copyreg
        before_env = dict(os.environ)
        before = (torch.device, torch.randn, torch.Tensor.to, torch.cuda.is_available, torch.load,
                  list(sys.meta_path), list(warnings.filters), dict(copyreg.dispatch_table))
        import ascend_compat
        after = (torch.device, torch.randn, torch.Tensor.to, torch.cuda.is_available, torch.load,
                 list(sys.meta_path), list(warnings.filters), dict(copyreg.dispatch_table))
        assert all(a is b or a == b for a, b in zip(before, after)), "something changed"
        assert dict(os.environ) == before_env
        assert torch.device("cuda").type == "cuda"
        assert not ascend_compat.report().active
        print("UNCHANGED")
    """, CUDA_VISIBLE_DEVICES="1,0", NCCL_SOCKET_IFNAME="eth0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "UNCHANGED\n" and proc.stderr == ""


def test_activate_without_backend_says_what_to_do():
    proc = run_python("""
        import ascend_compat
        try:
            ascend_compat.activate()
        except RuntimeError as exc:
            print("ERR", exc)
    """)
    assert "ERR" in proc.stdout and "--simulate" in proc.stdout


def test_import_with_simulator_is_silent_and_keeps_warning_filters():
    proc = run_python("""
        import warnings, torch
        filters = list(warnings.filters)
        import ascend_compat
        assert ascend_compat.report().active
        assert warnings.filters == filters
        assert torch.randn(2, device="cuda").device.type == "npu"
    """, ASCEND_COMPAT_SIMULATE="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""  # no banner


def test_no_patch_disables_activation_but_still_simulates():
    proc = run_python("""
        import ascend_compat, torch
        print(ascend_compat.report().active, torch.ones(1, device="npu").device, torch.device("cuda").type)
    """, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_NO_PATCH="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "npu:0", "cuda"]


def test_debug_logs_each_translation_once_per_call_site():
    proc = run_python("""
        import ascend_compat, torch
        for _ in range(5):
            torch.randn(2, device="cuda")
        torch.randn(2, device="cuda")
        print(ascend_compat.report().counters["device=: torch.randn"])
    """, ASCEND_COMPAT_SIMULATE="1", ASCEND_COMPAT_LOG_LEVEL="DEBUG")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6"
    lines = [line for line in proc.stderr.splitlines() if "device=: torch.randn" in line]
    assert len(lines) == 2, proc.stderr  # two call sites, one line each
    assert all("<string>:" in line for line in lines)


def _snapshot(changes):
    snap = {}
    for c in changes:
        if not isinstance(c, Patch):
            continue
        where = c._resolve()
        if where is None:
            continue
        owner, attr = where
        own = registry._own_dict(owner)
        snap[c.target] = (owner, attr, own.get(attr, _MISSING) if own is not None else getattr(owner, attr, _MISSING))
    return snap


def test_deactivate_restores_every_patched_object_by_identity():
    ascend_compat.deactivate()
    ascend_compat.activate("simulator")
    targets = cuda_shim.declared_changes()  # fresh declarations, only used for their targets
    ascend_compat.deactivate()
    before = _snapshot(targets)
    import copyreg

    table_before = dict(copyreg.dispatch_table)
    ascend_compat.activate("simulator")
    changed = [t for t, (owner, attr, v) in before.items()
               if (registry._own_dict(owner) or {}).get(attr, _MISSING) is not v]
    assert len(changed) > 150  # it really patched
    ascend_compat.deactivate()
    after = _snapshot(targets)
    wrong = [t for t in before if after[t][2] is not before[t][2]]
    assert wrong == []
    assert dict(copyreg.dispatch_table) == table_before
    assert torch.device("cuda").type == "cuda"


def test_activation_is_idempotent_and_thread_safe():
    ascend_compat.deactivate()
    original_to = torch.Tensor.to
    results = []
    barrier = threading.Barrier(8)

    def go():
        barrier.wait()
        results.append(ascend_compat.activate("simulator"))

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(results) == [False] * 7 + [True]
        assert torch.Tensor.to.__wrapped__ is original_to  # wrapped exactly once
    finally:
        ascend_compat.deactivate()
    assert torch.Tensor.to is original_to


def test_activated_context_manager():
    ascend_compat.deactivate()
    with ascend_compat.activated():
        assert torch.zeros(1, device="cuda").device.type == "npu"
        with ascend_compat.activated():  # nested: inner does not deactivate
            pass
        assert cuda_shim.is_active()
    assert not cuda_shim.is_active()
    with pytest.raises((RuntimeError, AssertionError), match="CUDA|NVIDIA"):
        torch.zeros(1, device="cuda")  # CPU build: real CUDA again


def test_report_counts_translations(shim):
    registry.reset_counters()
    torch.ones(2, device="cuda").cuda()
    rep = shim.report()
    assert rep.active and rep.backend == "simulator"
    assert rep.counters["device=: torch.ones"] == 1 and rep.counters["Tensor.cuda"] == 1
    assert "device=: torch.ones" in str(rep)
