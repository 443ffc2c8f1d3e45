"""Snakemake script of rule base_image: build one manifest image and write its sentinel."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from workflow.images import build_base, parse_manifest
from workflow.smk import logged

sm = snakemake  # noqa: F821
root = Path(sm.scriptdir).parents[1]
with logged(sm.log[0]):
    image = f"kotlin-bench/{sm.wildcards.repo_key}:{sm.wildcards.tag}"
    entry = next(e for e in parse_manifest(root / sm.params.manifest) if e.image == image)
    build_base(entry, root, Path(sm.log[0]).with_suffix(".build.log"), Path(sm.output[0]), sm.params.timeout)
    print(f"built {image}")
