"""Suite-wide: the simulated NPU writes CANN's plogs like CANN does (``ASCEND_PROCESS_LOG_PATH``, else
``~/ascend/log``); every test process and its children send them to one temporary directory instead."""
import atexit
import os
import shutil
import tempfile

if "ASCEND_PROCESS_LOG_PATH" not in os.environ:
    os.environ["ASCEND_PROCESS_LOG_PATH"] = tempfile.mkdtemp(prefix="ascend_compat_test_plog_")
    atexit.register(shutil.rmtree, os.environ["ASCEND_PROCESS_LOG_PATH"], True)
