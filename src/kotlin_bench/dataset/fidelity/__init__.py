"""Fidelity: our generated task directories and base recipes against the published benchmark's, compared by
meaning, not by bytes.

For every file of ours that has a published counterpart, the facts that decide a run are read from both
sides and compared:

- `task.toml`: the limits and network policy of every phase; metadata (cosmetic);
- the task Dockerfile: the base image, WORKDIR, ENV, USER, the seal step, the agent's tools;
- preparation (published `prepare.sh`; ours `prepare.env`, `warmup.sh` and the shared `prepare.sh`): the
  base commit, git settings, the warm-up's environment, steps and failure policy, a shallow history;
- the verifier (`test.sh`, ours with `task.env`): the test command and its environment, whether the
  paths of the test patch are restored first, whether a test patch that does not apply fails closed,
  stale reports deleted, reward 0 written first, a reward of 1 without JUnit reports;
- the scorer (`junit_compare.py`): behaviour, by running both scorers on the same probes of our own (a
  skipped and failed testcase, bytes that are not UTF-8, comments that break XML, nested testcases,
  Kotlin Multiplatform suffixes, a DOCTYPE...) and comparing their rewards;
- the seal: whether history is sealed, the base's ancestors kept, the branch HEAD is on;
- the flaky-test init script: its patterns and whether a filter without tests fails the task;
- `solve.sh`, `docker-compose.yaml`, and every base recipe (final JDK image, ENV, apt and Android SDK
  packages, the build of Android's command-line tools and the JDK sdkmanager runs on, clone URL);
- what the agent starts from: the tree after the warm-up (test results, changed and new files, a
  clean-tree check), read from what runs after the warm-up on both sides;
- what the agent phase makes programs print: the variables the runner adds and the banner every JVM
  prints (from the images' ENV and what our runner adds, `check(agent_env=...)`; Harbor adds nothing);
- whether the verifier stops processes it did not start;
- report handling: both collector-plus-scorer pipelines run on report files of our own (`pipeline.*`),
  and the size caps of collector and scorer;
- expected-list validation: both scorers run on expected lists with missing keys, overlaps, bad values.

`docs/fidelity.md` describes each of these classes and the differences kept.

Each difference is `cosmetic` (no effect on any run), `restructured` (the same effect reached another way)
or `behaviour-changing`. A behaviour-changing difference that the dataset specification does not list in
`fidelity.intended` (with its reason) fails the check.
"""

from kotlin_bench.dataset.fidelity.compare import AgentEnv, check
from kotlin_bench.dataset.fidelity.model import Difference, FidelityReport, Impact
from kotlin_bench.dataset.fidelity.report import render

__all__ = ["AgentEnv", "Difference", "FidelityReport", "Impact", "check", "render"]
