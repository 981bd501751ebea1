"""The rules check applies: one module per rule (found by :mod:`.registry`), plus shared helpers."""
