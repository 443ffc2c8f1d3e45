"""Predictions files: patches an agent produced elsewhere, one JSON object per line.

Accepted shapes (the SWE-bench and Multi-SWE-bench habits):
- `{"instance_id" | "task_id": "<task id>", "model_name_or_path": "...", "model_patch": "<diff>"}`
- `{"org": "<owner>", "repo": "<repo>", "number": <pr>, "fix_patch": "<diff>"}` (task id `<org>_<repo>-<number>`)

The whole file is checked before any container starts: malformed lines, duplicate ids and ids that are
not tasks of the dataset are reported together in one error. An empty or missing patch is not an error:
that run scores 0 with status reason `empty_patch` (a task without a line: `no_prediction`).

Patches the way model outputs really look: `patch_candidates` gives the patch as given, then (only where
they change it) normalised in order, each step on top of the previous: the diff taken out of markdown
code fences (```diff, ```patch or plain ```, dedented when the fence is indented, as in a list; or
<patch>/<diff> tags, as SWE-bench's `extract_diff` does), prose before the diff dropped, CRLF line ends made LF, a missing final newline added. The agent
phase (`kotlin_bench.runs.handoff.apply_patch`) applies the first candidate that applies.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core.suggest import did_you_mean


class PredictionsError(ValueError):
    """A predictions file is unusable; the message lists every problem found."""


@dataclass(frozen=True)
class Prediction:
    task_id: str
    model: str | None
    patch: str
    line: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.patch.encode("utf-8")).hexdigest()


# The keys a line may have (SWE-bench, then Multi-SWE-bench); others are an error when the line has no patch
# key, since a misspelt patch key (`patch`, `diff`) would otherwise score 0 as an empty patch.
SWE_BENCH_KEYS = ("instance_id", "task_id", "model_name_or_path", "model_patch")
MULTI_SWE_BENCH_KEYS = ("org", "repo", "number", "fix_patch", "model_name_or_path")
PATCH_KEYS = ("model_patch", "fix_patch")


def _unknown_keys(data: dict[str, Any]) -> None:
    if any(key in data for key in PATCH_KEYS):
        return
    known = (*SWE_BENCH_KEYS, *MULTI_SWE_BENCH_KEYS)
    unknown = [key for key in data if key not in known]
    if unknown:
        shape = MULTI_SWE_BENCH_KEYS if "org" in data else SWE_BENCH_KEYS
        named = "; ".join(f"`{key}`{did_you_mean(key, shape)}" for key in unknown)
        raise ValueError(
            f"no `model_patch` (or `fix_patch`) key, and unknown key(s) {named}; "
            f"the keys are {', '.join(SWE_BENCH_KEYS)} (or {', '.join(MULTI_SWE_BENCH_KEYS)})"
        )


def _parse_line(number: int, text: str) -> Prediction:
    data: Any = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    _unknown_keys(data)
    if "org" in data or "fix_patch" in data:
        missing = [k for k in ("org", "repo", "number") if k not in data]
        if missing:
            raise ValueError(f"Multi-SWE-bench shape needs {', '.join(missing)}")
        task_id = f"{data['org']}_{data['repo']}-{data['number']}"
        patch, model = data.get("fix_patch"), data.get("model_name_or_path")
    else:
        task_id = data.get("instance_id") or data.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("needs a string instance_id or task_id")
        patch, model = data.get("model_patch"), data.get("model_name_or_path")
    if patch is not None and not isinstance(patch, str):
        raise ValueError("the patch must be a string or null")
    if model is not None and not isinstance(model, str):
        raise ValueError("model_name_or_path must be a string")
    return Prediction(task_id=task_id, model=model, patch=patch or "", line=number)


def load_predictions(path: Path, task_ids: Iterable[str] | None = None) -> dict[str, Prediction]:
    """Read and check a predictions file (against the dataset's task ids, when given)."""
    try:
        # "\n" only: a patch may hold U+2028 and other characters str.splitlines() would split on
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise PredictionsError(f"{path}: cannot read predictions: {exc}") from None
    array = _json_array(lines)
    if array is not None:
        converted = converted_name(Path(path))
        raise PredictionsError(
            f"{path}: a JSON array of {array} prediction(s), expected JSON Lines (one JSON object per line); "
            f"convert it into a new file with `jq -c '.[]' {path} > {converted}` and point `predictions:` at "
            f"{converted.name}"
        )
    known = None if task_ids is None else set(task_ids)
    problems: list[str] = []
    found: dict[str, Prediction] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            prediction = _parse_line(number, text)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            problems.append(f"line {number}: malformed: {exc}")
            continue
        if prediction.task_id in found:
            problems.append(
                f"line {number}: duplicate id {prediction.task_id} (first on line {found[prediction.task_id].line})"
            )
        elif known is not None and prediction.task_id not in known:
            hint = did_you_mean(prediction.task_id, known)
            problems.append(f"line {number}: unknown task id {prediction.task_id}{hint}")
        else:
            found[prediction.task_id] = prediction
    if not found and not problems:
        problems.append("no prediction at all (an empty file scores every task 0): is it the right file?")
    if problems:
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise PredictionsError(f"{path}: {len(problems)} problem(s):\n  {shown}{more}")
    return found


def converted_name(path: Path) -> Path:
    """A new file beside `path` for its conversion: never `path` itself (a shell's `>` would empty the
    input before the converter reads it)."""
    candidate = path.with_name(f"{path.stem}.converted.jsonl")
    number = 1
    while candidate.exists() or candidate == path:
        number += 1
        candidate = path.with_name(f"{path.stem}.converted-{number}.jsonl")
    return candidate


def file_model(predictions: dict[str, Prediction]) -> str | None:
    """The model a predictions file names (its lines' `model_name_or_path`, several joined by `,`): the
    identity of every run of the agent, tasks without a line included."""
    models = sorted({p.model for p in predictions.values() if p.model})
    return ",".join(models) or None


def _json_array(lines: list[str]) -> int | None:
    """The length of the file's JSON array when the whole file is one (a SWE-bench `.json` file)."""
    text = "\n".join(lines).strip()
    if not text.startswith("["):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return len(data) if isinstance(data, list) else None


# --------------------------------------------------------------------------- normalisation

_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```[ \t]*(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^[ \t]*```[ \t\r]*$",
    re.MULTILINE | re.DOTALL,
)
_TAG = re.compile(r"<(patch|diff)>[ \t\r]*\n?(.*?)</\1>", re.DOTALL)
# A diff starts at `diff --git` or at a `--- ` line followed by a `+++ ` line.
_DIFF_START = re.compile(r"^(?:diff --git |--- [^\n]*\r?\n\+\+\+ )", re.MULTILINE)


def _looks_like_diff(text: str) -> bool:
    return _DIFF_START.search(text) is not None


def _fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced code block; a block indented (in a list, say) has its body
    dedented by the fence's indentation, as markdown reads it."""
    blocks = []
    for found in _FENCE.finditer(text):
        body, width = found["body"], len(found["indent"])
        if width:
            body = "".join(
                line[min(width, len(line) - len(line.lstrip(" "))) :]
                for line in body.splitlines(keepends=True)
            )
        blocks.append((found["lang"].lower(), body))
    return blocks


def _code_fence(text: str) -> str:
    """The diffs inside code fences or <patch>/<diff> tags, concatenated (labelled diff/patch blocks
    and tags first; unlabelled blocks that hold a diff otherwise); the text itself when there are none."""
    fenced = _fenced(text)
    labelled = [body for lang, body in fenced if lang in ("diff", "patch")]
    labelled += [body for _tag, body in _TAG.findall(text)]
    blocks = [b for b in labelled if _looks_like_diff(b)] or [b for _lang, b in fenced if _looks_like_diff(b)]
    if not blocks:
        return text
    return "".join(b if b.endswith("\n") else b + "\n" for b in blocks)


def _leading_prose(text: str) -> str:
    found = _DIFF_START.search(text)
    return text[found.start() :] if found else text


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _final_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


NORMALISATIONS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("code_fence", _code_fence),
    ("leading_prose", _leading_prose),
    ("crlf", _crlf),
    ("final_newline", _final_newline),
)


def patch_candidates(patch: str) -> list[tuple[tuple[str, ...], str]]:
    """(normalisations applied, text): the patch as given first, then one more for each normalisation
    that changes it, each on top of the ones before."""
    found: list[tuple[tuple[str, ...], str]] = [((), patch)]
    text, steps = patch, ()
    for name, step in NORMALISATIONS:
        changed = step(text)
        if changed != text:
            text, steps = changed, (*steps, name)
            found.append((steps, text))
    return found
