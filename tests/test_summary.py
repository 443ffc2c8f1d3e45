"""summary.csv from synthetic result.json files: its schema, its values, and reading it back."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.results.summary import STATUSES, SUMMARY_COLUMNS, SUMMARY_SCHEMA, read_summary, write_table
from kotlin_bench.scoring.reasons import Reason
from tests.factories import mixed_summary


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return mixed_summary(tmp_path)


def test_summary_schema(mixed: pd.DataFrame, tmp_path: Path) -> None:
    assert list(mixed.columns) == SUMMARY_COLUMNS
    assert {c: str(t) for c, t in mixed.dtypes.items()} == SUMMARY_SCHEMA
    assert set(mixed["status"]) <= set(STATUSES)
    failed = mixed[mixed["status"] != "resolved"]
    assert failed["reason"].notna().all()
    assert set(failed["reason"]) <= {r.value for r in Reason}
    assert mixed.loc[mixed["status"] == "resolved", "reason"].isna().all()
    write_table(mixed, tmp_path / "summary.csv")
    pd.testing.assert_frame_equal(read_summary(tmp_path / "summary.csv"), mixed)


def test_summary_values(mixed: pd.DataFrame) -> None:
    rows = mixed.set_index(["agent", "task"])
    assert list(mixed["agent"]) == ["agent"] * 4 + ["oracle"] * 4
    first = rows.loc[("agent", "calc-1")]
    assert (first["input_tokens"], first["output_tokens"], first["cost_usd"]) == (1200, 300, 0.042)
    assert (first["f2p_expected"], first["f2p_landed"], first["f2p_missing"]) == (2, 2, 0)
    assert (first["agent_sec"], first["verifier_sec"], first["total_sec"]) == (1.5, 10.25, 12.0)
    assert first["repository"] == "acme/calc" and first["model"] == "m1"
    assert rows.loc[("agent", "calc-2"), "reason"] == "f2p_failed"
    assert rows.loc[("agent", "calc-2"), "f2p_missing"] == 1
    assert rows.loc[("agent", "slug-1"), "reason"] == "verifier_timeout"
    error = rows.loc[("agent", "units-1")]
    assert list(error[["status", "reason", "reason_detail"]]) == ["error", "infrastructure", "RunError"]
    assert error["error"] == "the engine went away"
    assert pd.isna(error["reward"]) and pd.isna(error["total_sec"]) and pd.isna(error["input_tokens"])
    assert pd.isna(rows.loc[("oracle", "calc-1"), "model"])
