"""kotlin-bench performance suite: the harness against the bare test run and against Harbor (see README.md)."""
