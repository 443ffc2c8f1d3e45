"""`python -m workflow ...` from the repository root: kept for one release; use `kotlin-bench ...`.

The Python package is now `kotlin_bench` (installed by scripts/setup.sh); `workflow/` holds only what
Snakemake runs (scripts, schemas). This shim prints a note and runs the same command.
"""

import sys

from kotlin_bench.cli import main

print(
    "note: `python -m workflow` is deprecated and will be removed in the next release; use `kotlin-bench "
    + " ".join(sys.argv[1:2])
    + " ...` (or `python -m kotlin_bench`)",
    file=sys.stderr,
)
sys.exit(main())
