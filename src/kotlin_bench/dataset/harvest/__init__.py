"""`kotlin-bench harvest`: new tasks from a repository's merged pull requests, a window at a time.

- `rules`: the vocabulary (`Verdict`, `Reason`) and the Multi-SWE-bench rules a pull request must pass to be
  a candidate (merged into the default branch, resolves an issue, changes tests and code, not a bot's, not
  too large);
- `records`: the API's records as the harvest reads them (one malformed record is that pull request's
  rejection, never the harvest's end), the window, and the screening of one pull request (`Screened`, the
  ledger a rerun reuses);
- `listing`: the window's pull requests listed and screened through the API client, and checked against
  the repository's history (the base commit is there, the diff splits into patches that apply);
- `table`: the candidates table (every pull request, its verdict and reason) and the dated dataset
  specification of the accepted tasks.

Validation of the candidates is the workflow's (`rules/harvest.smk`, `kotlin_bench.validation.harvest`).
"""
