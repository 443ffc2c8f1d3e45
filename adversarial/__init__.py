"""The integrity suite (see `python3 -m adversarial --help` and examples/adversarial/README.md)."""
