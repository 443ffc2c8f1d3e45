"""Entry point: `python -m kotlin_bench <command> ...`, the same as the `kotlin-bench` command."""

import sys

from kotlin_bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
