"""Sealed history: what the example task images let an agent see of the repository's history.

As in the published benchmark, the base commit's ancestors stay (an agent can read `git log` and
`git blame`) on a branch `task-base` at the base commit, and every later commit is gone: the pull
request's head and every object it adds, the upstream `main` that moved past the base, every other ref,
remote, reflog, loose or unreachable object."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from adversarial.common import REPO, Row

if TYPE_CHECKING:
    from kotlin_bench.engine.engine import EngineSettings


def pr_heads(tasks: list[str], work: Path) -> dict[str, tuple[str, str, list[str], int]]:
    """task -> (base sha, PR head sha, the objects the PR adds, how many commits the base has with its
    ancestors), from the upstream repositories built on the host with the images' own builder (the SHAs
    depend only on the files)."""
    spec = json.loads((REPO / "examples/dataset.json").read_text(encoding="utf-8"))
    entries = {t["id"]: t for t in spec["tasks"]}
    found: dict[str, tuple[str, str, list[str], int]] = {}
    for task in tasks:
        project, number = task.removeprefix("examples_").rsplit("-", 1)
        dest = work / project
        if not dest.exists():
            subprocess.run(
                [
                    "bash",
                    str(REPO / "examples/bases/toolchain/make-upstream-repo.sh"),
                    str(REPO / "examples/bases" / project / "upstream"),
                    str(dest),
                ],
                check=True,
                capture_output=True,
            )
        git = ["git", "-C", str(dest)]
        head = subprocess.run(
            [*git, "rev-parse", f"refs/pull/{number}/head"], capture_output=True, text=True, check=True
        ).stdout.strip()
        base = str(entries.get(task, {}).get("base_commit") or "")
        if not base:
            base = subprocess.run(
                [*git, "rev-parse", f"{head}^"], capture_output=True, text=True, check=True
            ).stdout.strip()
        objects = subprocess.run(
            [*git, "rev-list", "--objects", head, f"^{base}"], capture_output=True, text=True, check=True
        ).stdout
        ancestry = subprocess.run(
            [*git, "rev-list", "--count", base], capture_output=True, text=True, check=True
        ).stdout.strip()
        pr_objects = [line.split()[0] for line in objects.splitlines() if line.strip()]
        found[task] = (base, head, pr_objects, int(ancestry))
    return found


SEAL_CHECK = r"""
set -u
cd "$REPO_DIR"
g=$(git rev-parse --absolute-git-dir)
echo "head=$(git rev-parse HEAD)"
echo "branch=$(git symbolic-ref -q HEAD)"
echo "count=$(git rev-list --all --count)"
echo "shallow=$(test -f "$g/shallow" && echo yes || echo no)"
echo "remotes=$(git remote | wc -l)"
echo "refs=$(git for-each-ref --format='%(refname)' | tr '\n' ' ')"
echo "stash=$(git stash list 2>/dev/null | wc -l)"
echo "reflogs=$(find "$g/logs" -type f 2>/dev/null | wc -l)"
echo "special=$(ls "$g" | grep -cE '^(FETCH_HEAD|ORIG_HEAD|MERGE_HEAD|packed-refs)$')"
echo "loose=$(git count-objects -v | sed -n 's/^count: //p')"
echo "unreachable=$(git fsck --unreachable --dangling --no-reflogs --no-progress 2>&1 | grep -cE '^(unreachable|dangling)')"
echo "packed=$(for i in "$g"/objects/pack/*.idx; do git show-index <"$i"; done | wc -l)"
echo "reachable=$(git rev-list --objects --all | wc -l)"
present=0
for o in $PR_OBJECTS; do git cat-file -e "$o" 2>/dev/null && present=$((present + 1)); done
echo "pr_present=$present"
"""


def run_sealed(
    tasks: list[str] | None = None, workspace: Path = REPO, engine: EngineSettings | None = None
) -> list[Row]:
    """In every example task image the base commit and its ancestors are reachable on `task-base`, and
    no later commit nor any object of the fix exists. The images are those `workspace` built (its
    sentinels name them: each workflow directory has its own task image names), in `engine` (default
    Docker)."""
    from kotlin_bench.core import names
    from kotlin_bench.dataset.task import discover, load_task
    from kotlin_bench.engine.engine import connect
    from kotlin_bench.engine.images import ImageError, image_id, read_sentinel

    def built(task_id: str) -> str | None:
        try:
            return read_sentinel(workspace / names.task_sentinel(task_id)).id
        except ImageError:
            return None

    client = connect(engine).client
    loaded = [load_task(p, require_materialized=False) for p in discover(REPO / "examples/tasks")]
    selected = [t for t in loaded if tasks is None or t.id in tasks]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-upstream.") as tmp:
        heads = pr_heads([t.id for t in selected], Path(tmp))
    for task in selected:
        base, head, objects, ancestry = heads[task.id]
        image = built(task.id)
        if image is None or image_id(client, image) is None:
            rows.append(Row("sealed", task.image, "image missing", "build it: snakemake --cores 2", False))
            continue
        env = {"REPO_DIR": task.repo_dir, "PR_OBJECTS": " ".join(objects)}
        out = client.containers.run(
            image, ["bash", "-c", SEAL_CHECK], environment=env, remove=True, network_disabled=True
        )
        facts = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
        empty = ("remotes", "stash", "reflogs", "special", "loose", "unreachable", "pr_present")
        ok = (
            facts.get("head") == task.base_commit == base
            and facts.get("branch") == "refs/heads/task-base"
            and facts.get("refs", "").split() == ["refs/heads/task-base"]
            and facts.get("count") == str(ancestry)
            and ancestry > 1
            and facts.get("shallow") == "no"
            and all(facts.get(k) == "0" for k in empty)
            and facts.get("packed") == facts.get("reachable")
        )
        detail = (
            f"HEAD on {facts.get('branch')} at base; {facts.get('count')} commits reachable (base and its "
            f"{ancestry - 1} ancestors); PR head {head[:10]} and its {len(objects)} object(s): "
            f"{facts.get('pr_present')} present; refs: {facts.get('refs', '').strip()}; "
            f"remotes/stash/reflogs/loose/unreachable: "
            f"{'/'.join(facts.get(k, '?') for k in ('remotes', 'stash', 'reflogs', 'loose', 'unreachable'))}; "
            f"pack {facts.get('packed')} = reachable {facts.get('reachable')}"
        )
        rows.append(Row("sealed", task.image, "sealed" if ok else "NOT SEALED", detail, ok))
    return rows
