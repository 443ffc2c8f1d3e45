"""Results: summary.csv, statistics, reports, plots, reproduction verdicts."""
