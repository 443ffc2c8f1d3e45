"""`kotlin-bench clean`: what this workspace left on the container engine, listed, and removed with --remove.

Lists the containers, egress proxies and per-run networks a killed run left, Harbor trials' compose
containers and networks staged in this workspace's results, the images its builds made that no sentinel
of it records, and the build cache (layers) its builds committed that nothing uses; never anything of
another workspace or of a user (`kotlin_bench.engine.leftovers`). `--all-images` adds this workspace's
task images: each is released as `images: {keep: bases}` does (a record under
results/images/released/clean/), its sentinel stays, so no run is redone; the next job that needs the
image builds it again (or pulls it back from `registry:`). Removing is refused while Snakemake or a job
of this workspace runs (`kotlin_bench.runs.activity`); a stale lock left by a killed Snakemake does not
stop it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.engine.leftovers import Findings, Leftover, Owner, Removal
from kotlin_bench.engine.retention import CLEAN
from kotlin_bench.runs.activity import Activity, LockState
from kotlin_bench.tools.cli.text import err, out, report_error, table
from kotlin_bench.tools.root import OUTSIDE, add_root, find_root

if TYPE_CHECKING:
    from kotlin_bench.engine.engine import EngineSettings

REFUSED = 1  # exit status: removing was refused, or something could not be removed


def size_text(size: int | None) -> str:
    if size is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000  # type: ignore[assignment]
    return "-"


def show_id(item: Leftover) -> str:
    return item.id.removeprefix("sha256:")[:12]


def render(findings: Findings) -> str:
    rows = [
        (item.kind, show_id(item), item.name, size_text(item.size), item.why, item.in_use or "no")
        for item in findings.leftovers
    ]
    return table(rows, ("kind", "id", "name", "size", "why it is ours", "in use by a live job"))


def lock_note(activity: Activity) -> str | None:
    if activity.lock_state is LockState.STALE:
        return (
            f"Snakemake's lock ({names.SNAKEMAKE_LOCKS}/) is stale: no Snakemake of this workspace runs "
            "(it was killed). It does not stop `clean`; clear it with `snakemake --unlock` before the next run."
        )
    if activity.lock_state is LockState.LIVE:
        return f"Snakemake runs in this workspace (its lock in {names.SNAKEMAKE_LOCKS}/ is live)."
    return None


def release_note(leftovers: tuple[Leftover, ...]) -> str | None:
    """What releasing task images means: nothing is redone; a job that needs one builds it again."""
    tasks = sorted({item.release.task for item in leftovers if item.release is not None})
    if not tasks:
        return None
    return (
        f"--all-images: {len(tasks)} task image(s) are released ({', '.join(tasks)}): their sentinels "
        f"(results/images/task/) stay, so no run is redone and every result keeps its verdict; a release "
        f"record (results/images/released/{CLEAN}/<task>.json) says the image is gone, and the next job "
        "that needs one builds it again (or pulls it back from `registry:`) before it starts."
    )


def report_removals(removals: list[Removal]) -> int:
    failed = 0
    for done in removals:
        item = done.leftover
        what = f"{item.kind} {show_id(item)} ({item.name})"
        if done.error is None:
            out(f"removed {what}" + "".join(f"; {note}" for note in done.also))
        else:
            failed += 1
            err(f"could not remove {what}: {done.error}")
    out(f"{len(removals) - failed} removed, {failed} could not be removed")
    return REFUSED if failed else 0


def _engine_of(root: Path) -> EngineSettings:
    """The engine the workspace's config.yaml names (`engine:`; Docker when it has none, or no config)."""
    import yaml

    from kotlin_bench.engine.engine import EngineSettings

    path = root / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return EngineSettings.of_config(config)


def cmd_clean(args: argparse.Namespace) -> int:
    from kotlin_bench.engine.engine import EngineError, connect
    from kotlin_bench.engine.leftovers import find, remove
    from kotlin_bench.runs.activity import scan

    root = Path(args.root).resolve()
    if find_root(root) != root:
        raise FileNotFoundError(f"{root} is not a kotlin-bench workflow directory: {OUTSIDE}")
    activity = scan(root)
    try:
        engine = connect(_engine_of(root))
    except EngineError as exc:
        report_error(str(exc))
        return 2
    findings = find(engine.client, Owner.of(root), activity.live(), all_images=args.all_images)
    out(f"workspace {root} (tag {names.workdir_tag(root)})")
    if findings.leftovers:
        out(render(findings))
    else:
        out("nothing of this workspace is left on the engine")
    for kept in findings.kept:
        out(f"kept image {kept.id.removeprefix('sha256:')[:12]} ({kept.name}): {kept.why}")
    for line in (*findings.warnings, lock_note(activity), release_note(findings.leftovers)):
        if line:
            out(line)
    if not args.remove:
        if findings.leftovers:
            out("nothing was changed; `kotlin-bench clean --remove` removes what is listed")
        return 0
    if activity.busy:
        err("refusing to remove: this workspace is running (wait for it to finish, or stop it):")
        for reason in activity.reasons():
            err(f"  {reason}")
        return REFUSED
    return report_removals(remove(engine, findings))


def register(sub: Any) -> None:
    p = sub.add_parser(
        "clean",
        help="list what this workspace left on the engine (containers, networks, proxies, images, build "
        "cache); --remove removes it",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument(
        "--remove",
        action="store_true",
        help="remove what is listed (refused while Snakemake or a job of this workspace runs)",
    )
    p.add_argument(
        "--all-images",
        action="store_true",
        help="also this workspace's task images: released with a record under "
        f"results/images/released/{CLEAN}/, their sentinels stay (no run is redone; the next job that "
        "needs an image builds it again or pulls it back); base images are never removed",
    )
    add_root(p)
    p.set_defaults(func=cmd_clean)
