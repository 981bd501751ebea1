"""Rule ``device-compare``: the verdict follows what is compared (knowledge.devices records).

Was: nanoGPT's ``'cuda' in device`` / ``device_type == 'cuda'`` on strings the script set were rated
partial with "the comparison is False", although under the shim they are True (issue 23 item 10)."""
from __future__ import annotations

import textwrap

from ascend_compat.analysis.scan import scan_file


def _ratings(tmp_path, source: str):
    p = tmp_path / "s.py"
    p.write_text(textwrap.dedent(source))
    return {f.line: f.handling for f in scan_file(str(p)).findings if f.rule == "device-compare"}


def test_strings_the_script_set_hold_and_torch_values_do_not(tmp_path):
    got = _ratings(tmp_path, """\
        import torch
        device = 'cuda'
        device_type = 'cuda' if 'cuda' in device else 'cpu'
        x = torch.ones(1).to(device)
        a = device_type == 'cuda'
        b = x.device.type == 'cuda'
        c = 'cuda' in str(x.device)
        def configure(device_type):
            return device_type == 'cuda'
        def on_tensor(t):
            device = t.device
            return str(device).startswith('cuda') or device.type == 'cuda'
    """)
    assert got == {3: "auto", 5: "auto", 6: "partial", 7: "partial", 9: "auto", 12: "partial"}


def test_a_name_assigned_a_torch_value_is_partial_in_either_order(tmp_path):
    got = _ratings(tmp_path, """\
        import torch
        def before(t):
            dev = t.device.type
            return dev == "cuda"
        def after():
            return run_device == "cuda"
        run_device = torch.ones(1).device.type
    """)
    assert got == {4: "partial", 6: "partial"}


def test_migrate_keeps_both_sides_equal(tmp_path):
    from ascend_compat.analysis.migrate.transform import migrate_source

    code = migrate_source("device = 'cuda'\ndevice_type = 'cuda' if 'cuda' in device else 'cpu'\n"
                          "use_fused = device_type == 'cuda'\n").code
    assert "device = 'npu'" in code and "'npu' if 'npu' in device" in code and "device_type == 'npu'" in code
