"""kotlin-bench: the evaluation workflow for the Kotlin benchmark."""

HARNESS_VERSION = "0.1.0"
