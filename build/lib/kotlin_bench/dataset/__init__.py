"""The dataset: its specification, task directories, upstream files, predictions, the leaderboard, fidelity."""
