"""Scoring: the verifier that runs in task containers, and its rules as the host uses them."""
