"""Every ``ASCEND_COMPAT_*`` variable the package reads is in ``ascend_compat._config``'s table, and
the table names none that nothing reads."""
from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ascend_compat"
NAME = re.compile(r"ASCEND_COMPAT_[A-Z0-9_]*[A-Z0-9]")


def test_config_table_lists_every_variable():
    table_text = (SRC / "_config.py").read_text(encoding="utf-8").split('"""')[1]
    documented = set(re.findall(r"``(ASCEND_COMPAT_[A-Z0-9_]+)``", table_text))
    used = set()
    for path in SRC.rglob("*.py"):
        if path.name == "_config.py":
            continue
        used |= {n for n in NAME.findall(path.read_text(encoding="utf-8")) if n != "ASCEND_COMPAT_SIM"}
    used |= set(NAME.findall((SRC / "_config.py").read_text(encoding="utf-8").split('"""', 2)[2]))
    assert used - documented == set(), "read but not in the table"
    assert documented - used == set(), "in the table but read nowhere"
