"""The vocabulary every part shares: names and paths, atomic writes, the run record, report text."""
