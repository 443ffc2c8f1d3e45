"""Entry point: `python -m kotlin_bench <command> ...`, the same as the `kotlin-bench` command.

Started in (or with `--root`) a checkout other than the one this package belongs to, the command runs
again with that checkout's package (`kotlin_bench.core.checkout`): each checkout runs its own code.
"""

import os
import sys
from pathlib import Path


def _root(argv: list[str]) -> Path | None:
    """The workflow directory the command will work in (`--root`, else the one the working directory is
    in), read before the command line is parsed."""
    from kotlin_bench.tools.root import find_root

    for i, arg in enumerate(argv):
        if arg == "--root" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--root="):
            return Path(arg.split("=", 1)[1])
    return find_root(Path.cwd().resolve())


def main() -> int:
    from kotlin_bench.core.checkout import checkout_command

    argv = sys.argv[1:]
    root = _root(argv)
    switch = checkout_command(root, argv, sys.executable) if root is not None and root.is_dir() else None
    if switch is not None:
        command, env = switch
        os.execve(sys.executable, command, env)
    from kotlin_bench.tools.cli import main as cli

    return cli()


if __name__ == "__main__":
    sys.exit(main())
