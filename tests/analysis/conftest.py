"""pytest configuration for tests/analysis (helpers live in analysis_helpers.py)."""
