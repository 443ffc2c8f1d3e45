"""kotlin-bench: a benchmark of real Kotlin software-engineering tasks for coding agents, and the
Snakemake workflow that runs it (see docs/design.md for the map of this package)."""

HARNESS_VERSION = "0.2.0"
