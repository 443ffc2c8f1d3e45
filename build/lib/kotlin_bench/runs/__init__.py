"""Runs: agents, the hand-off of their work, solving and verifying one (task, agent, attempt)."""
