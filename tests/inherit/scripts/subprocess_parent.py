"""Starts child.py as a new interpreter, as training wrappers do."""
import subprocess
import sys
from pathlib import Path

subprocess.run([sys.executable, str(Path(__file__).with_name("child.py"))], check=True)
