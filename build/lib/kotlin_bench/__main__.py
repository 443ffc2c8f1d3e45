"""Entry point: `python -m kotlin_bench <command> ...`, the same as the `kotlin-bench` command."""

import sys


def main() -> int:
    from kotlin_bench.tools.cli import main as cli

    return cli()


if __name__ == "__main__":
    sys.exit(main())
