"""Shared pytest set-up for tests/ecosystem."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: multi-process runs (torchrun / accelerate launch / Lightning DDP), "
                                       "each 20-60 s; deselect with -m 'not slow'")
