"""Test launcher: enable ascend-compat's drop-in modules, then run SCRIPT [ARGS...] as __main__.

Used under ``ascend-compat run --simulate``; once the shim installs the drop-ins itself on
activation this launcher only confirms they are there.
"""
import runpy
import sys

from ascend_compat.ecosystem.dropins import _finder as _modules

_modules.install()
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
