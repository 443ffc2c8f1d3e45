"""kotlin-bench: a benchmark of real Kotlin software-engineering tasks for coding agents, and the
Snakemake workflow that runs it (see docs/design.md for the map of this package)."""

HARNESS_VERSION = "0.2.0"  # the package's version (result.json records it as `harness_version`)
# The results tree's layout, a number of its own: 1 had one step that solved and scored (its run
# directories hold the agent's files beside result.json); 2 solves into work/ and verifies apart.
# `kotlin-bench migrate` moves layout 1 into this one.
RESULTS_LAYOUT = 2
LEGACY_LAYOUT = 1
