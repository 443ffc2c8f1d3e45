"""Reproduction: our outcomes against a reference table, task by task or repository by repository.

config.yaml:

    reproduce:
      reference: oracle        # `oracle`, `nop`, a CSV path (relative to the workflow directory),
                               # `leaderboard:<setup>` (a published leaderboard row, see below),
                               # or a mapping {agent name: reference}
      agents: [oracle]         # which agents are compared (default: every agent; not with a mapping)
      tolerance: 0.05          # rate references: allowed |ours - reference| outside our 95% interval

A reference CSV holds per-task outcomes (`task,resolved`; resolved is 1/0, true/false, yes/no or
resolved/unresolved; an optional `repository` column) or per-repository rates (`repository,rate`, rate
in [0, 1]). The built-in references are `oracle` (every task of our summary resolved) and `nop` (none).

Per task, ours is resolved when at least half of its attempts resolved it (an error counts as unresolved);
a task whose attempts all errored never agrees. Per repository, a rate reference agrees when it lies in our
95% bootstrap interval or within `tolerance` of our rate. Only tasks (repositories) present on both sides
are judged; the others are listed as not compared.

A leaderboard row (`leaderboard:Claude Code + Opus 4.7 xhigh`, rows in `reference/leaderboard.csv`, see
`kotlin_bench.dataset.leaderboard`) gives only counts: resolved of 105 submitted. The comparison is made on the
leaderboard's task set only: runs of other tasks are left out and named, tasks of the set that were not
run make the comparison NOT COMPARABLE (naming them; a rate on fewer tasks is not the row's rate), and
errored runs are counted both ways: as unresolved (the primary verdict) and excluded (n shrinks). Our
resolved count and the row's are two independent binomial proportions; the 95% interval of their
difference is Newcombe's hybrid score interval (`kotlin_bench.results.stats.newcombe_interval`). The verdict is
REPRODUCED when the interval contains 0, HIGHER / LOWER when it lies above / below 0. With several
attempts each attempt is judged, and the mean count (on the set's n, which is conservative) gives the
primary verdict, with the spread across attempts beside the published single number. Tokens and wall
time are set beside the row's (tokens in millions; whether the row's figure is per run or per task is
not certain, so both readings are shown).

Per agent: `results/reproduce/<agent>.csv` (the comparison; `level` is `task` or `repository`; for a
leaderboard row, `part` is `row`, `rate`, `usage` or `task`) and `results/reproduce/<agent>.md` (verdict
line, differing tasks, per-repository deltas; for a leaderboard row the rates, attempts, tokens and time,
and the task set). `reproduce_agent` makes both; the aggregate rule and `kotlin-bench reproduce` call it.
"""
