"""``python -m ascend_compat`` is the command-line tool."""
import sys

from ascend_compat.cli import main

if __name__ == "__main__":
    sys.exit(main())
