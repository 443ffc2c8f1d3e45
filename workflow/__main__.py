"""Entry point: `python -m workflow <command> ...` (see workflow.cli)."""

import sys

from workflow.cli import main

if __name__ == "__main__":
    sys.exit(main())
