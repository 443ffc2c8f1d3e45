"""`kotlin-bench egress classify --task <id> <url>...`: whether a URL would fetch the task's fix.

The retrieval rule of the egress record (`kotlin_bench.core.retrieval`), on the task's facts from the
dataset specification (the config's, or `--spec`), for auditing logs from elsewhere: one line per URL,
`retrieval: <why>` or `ok: <why>`. Exit 1 when any URL is retrieval.
"""

from __future__ import annotations

import argparse
from typing import Any

from kotlin_bench.core import retrieval
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.tools.cli.dataset import CONFIG_DEFAULTS, common
from kotlin_bench.tools.cli.text import out
from kotlin_bench.tools.root import from_config


def cmd_classify(args: argparse.Namespace) -> int:
    from_config(args, CONFIG_DEFAULTS)
    facts = load_dataset(args.spec).task(args.task).retrieval_facts()
    flagged = False
    for url in args.urls:
        verdict = retrieval.classify(url, facts)
        flagged |= verdict.retrieval
        out(f"{verdict}  {url}" if len(args.urls) > 1 else str(verdict))
    return 1 if flagged else 0


def register(sub: Any) -> None:
    p = sub.add_parser("egress", help="the egress record's retrieval rule (docs/threat-model.md)")
    inner = p.add_subparsers(dest="egress_command", required=True)
    c = inner.add_parser(
        "classify",
        help="whether URLs would fetch a task's fix: prints `retrieval` or `ok` with the reason",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    c.add_argument("--task", required=True, help="the task id (of the dataset specification)")
    c.add_argument("urls", nargs="+", metavar="URL", help="a URL (scheme optional)")
    common(c, tasks_dir=False, config=True)
    c.set_defaults(func=cmd_classify)
