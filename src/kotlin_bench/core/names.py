"""Every name and path the parts of kotlin-bench agree on, spelled out once.

- images: `kotlin-bench/<repo_key>:<tag>` (bases), `kotlin-bench/<repo_key>:pr-<N>` (a task's published
  name, in its docker-compose.yaml) and `kotlin-bench/<repo_key>:pr-<N>.ws-<workdir tag>` (the task image
  the workflow builds);
- the results tree: image sentinels, run directories and their files, reports, logs;
- task directory files that materialization writes;
- folders inside task containers, and the labels on every container and network the harness makes.

Paths under `results/` are relative to the workflow directory (Snakemake's working directory), as
strings, because rules and input functions use them as Snakemake targets.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

# --------------------------------------------------------------------------- images

IMAGE_NAMESPACE = "kotlin-bench"
_IMAGE_RE = re.compile(r"^kotlin-bench/(?P<repo>[a-z0-9][a-z0-9._-]*):(?P<tag>[A-Za-z0-9][A-Za-z0-9._-]*)$")


def image(repo_key: str, tag: str) -> str:
    """A base image (or any image of ours): `kotlin-bench/<repo_key>:<tag>`."""
    return f"{IMAGE_NAMESPACE}/{repo_key}:{tag}"


def task_image(repo_key: str, pr: int) -> str:
    """A task image: the base image's repository key and the pull request number."""
    return image(repo_key, f"pr-{pr}")


def built_task_image(published: str, workdir: Path | None = None) -> str:
    """The name the workflow gives a task image it builds: the published name (`task_image`) with the
    workflow directory's tag. A Harbor run of a task directory builds (and by default then deletes) the
    published name, and two checkouts sharing an engine each have their own, so no one else's build
    takes this name."""
    return f"{published}{built_task_suffix(workdir)}"


def built_task_suffix(workdir: Path | None = None) -> str:
    """How the names of the task images a workflow directory builds end: `.ws-<workdir tag>`."""
    return f".ws-{workdir_tag(workdir)}"


def is_built_task_image(name: str, workdir: Path | None = None) -> bool:
    """Whether `name` is a task image name the workflow directory `workdir` builds (`built_task_image`)."""
    if not is_ours(name) or not name.endswith(built_task_suffix(workdir)):
        return False
    _repo, tag = image_parts(name)
    return re.fullmatch(r"pr-\d+" + re.escape(built_task_suffix(workdir)), tag) is not None


def image_parts(name: str) -> tuple[str, str]:
    """Split `kotlin-bench/<repo>:<tag>` into (repo, tag); anything else is an error."""
    match = _IMAGE_RE.match(name)
    if not match:
        raise ValueError(f"image {name!r} is not of the form {IMAGE_NAMESPACE}/<repo>:<tag>")
    return match["repo"], match["tag"]


def is_ours(name: str) -> bool:
    return name.startswith(f"{IMAGE_NAMESPACE}/")


# --------------------------------------------------------------------------- the results tree

RESULTS = "results"
SUMMARY_CSV = f"{RESULTS}/summary.csv"
SUMMARY_MD = f"{RESULTS}/summary.md"
RATES_CSV = f"{RESULTS}/rates.csv"
RATES_BY_REPOSITORY_CSV = f"{RESULTS}/rates_by_repository.csv"
COMPARISONS_CSV = (
    f"{RESULTS}/comparisons.csv"  # paired comparisons of the agents (kotlin_bench.results.compare)
)
REPORT_HTML = f"{RESULTS}/report.html"
PLOT_RATES = f"{RESULTS}/plots/rates.png"
PLOT_RATES_BY_REPOSITORY = f"{RESULTS}/plots/rates_by_repository.png"
PLOT_OUTCOMES = f"{RESULTS}/plots/outcomes.png"
PLOT_QUARTERS = f"{RESULTS}/plots/rate_by_merge_quarter.png"
REPRODUCE_DIR = f"{RESULTS}/reproduce"
VERDICTS_JSON = f"{REPRODUCE_DIR}/verdicts.json"
HEALTHCHECK_DIR = f"{RESULTS}/healthcheck"
HEALTHCHECK_CSV = f"{HEALTHCHECK_DIR}/summary.csv"
HEALTHCHECK_MD = f"{HEALTHCHECK_DIR}/summary.md"
LOGS = f"{RESULTS}/logs"
# The results site (kotlin_bench.results.site): static pages that open from disk.
SITE = f"{RESULTS}/site"
SITE_INDEX = f"{SITE}/index.html"
SITE_LIVE = f"{SITE}/live.html"  # the runs in progress, written as each run finishes
SITE_PAGES = ".pages.json"  # under SITE: each page's input key, so a rebuild writes only what changed


def site_run_page(agent: str, task_id: str, attempt: int | str, site: str = SITE) -> str:
    return f"{site}/runs/{agent}/{task_id}/attempt-{attempt}.html"


def site_task_page(task_id: str, site: str = SITE) -> str:
    return f"{site}/tasks/{task_id}.html"


def site_pair_page(agent_a: str, agent_b: str, site: str = SITE) -> str:
    return f"{site}/compare/{agent_a}--{agent_b}.html"


def base_sentinels(results: str = RESULTS) -> str:
    """The directory of the base image sentinels (`<repo_key>/<tag>.json` under it)."""
    return f"{results}/images/base"


def task_sentinels(results: str = RESULTS) -> str:
    """The directory of the task image sentinels (`<task_id>.json` under it)."""
    return f"{results}/images/task"


IMAGES = f"{RESULTS}/images"
BASE_SENTINEL_GLOB = "base/*/*.json"  # under IMAGES
TASK_SENTINEL_GLOB = "task/*.json"  # under IMAGES
REBUILT_GLOB = "rebuilt/*.json"  # under IMAGES: task images built again after a release
# Every layer the workflow's builds commit (not those taken from the cache), one line each:
# `<workflow directory>\t<short image id>\t<image name>`; `kotlin-bench clean` finds the build cache a
# workspace made by it (a layer's own labels are inherited from the image it was built FROM).
BUILD_LEDGER = f"{IMAGES}/layers.tsv"


def base_sentinel(repo_key: str, tag: str, results: str = RESULTS) -> str:
    return f"{base_sentinels(results)}/{repo_key}/{tag}.json"


def task_sentinel(task_id: str, results: str = RESULTS) -> str:
    return f"{task_sentinels(results)}/{task_id}.json"


def task_image_release(task_id: str, purpose: str, results: str = RESULTS) -> str:
    """The record of a task image removed once the jobs of one purpose that needed it were done (config
    `images: {keep: bases}`; kotlin_bench.engine.retention)."""
    return f"{results}/images/released/{purpose}/{task_id}.json"


def task_image_rebuilt(task_id: str, results: str = RESULTS) -> str:
    """The record of a task image built again by a job that needed it after its release (a pull by digest
    brings back the same image: its sentinel stays the record)."""
    return f"{results}/images/rebuilt/{task_id}.json"


def is_image_sentinel(path: str) -> bool:
    """Whether a rule input is an image sentinel (a base or task image the job builds FROM)."""
    return path.startswith(f"{RESULTS}/images/") and path.endswith(".json")


def runs_root(results: str = RESULTS) -> str:
    return f"{results}/runs"


def run_dir(agent: str, task_id: str, attempt: int | str) -> str:
    return f"{runs_root()}/{agent}/{task_id}/attempt-{attempt}"


def work_dir(agent: str, task_id: str, attempt: int | str) -> str:
    """The solve step's directory: the work record and everything the agent phase left."""
    return f"{run_dir(agent, task_id, attempt)}/{WORK_DIR}"


def work_record(agent: str, task_id: str, attempt: int | str) -> str:
    return f"{work_dir(agent, task_id, attempt)}/{WORK_FILE}"


def verify_dir(agent: str, task_id: str, attempt: int | str, repeat: int | str = 1) -> str:
    """Where one verification of a run goes: the run directory (repeat 1, the verdict), or
    `repeats/<r>/` in it (the repeated verifications, `verify: {repeats: N}`)."""
    base = run_dir(agent, task_id, attempt)
    return base if str(repeat) == "1" else f"{base}/{REPEATS_DIR}/{repeat}"


def verify_result(agent: str, task_id: str, attempt: int | str, repeat: int | str = 1) -> str:
    return f"{verify_dir(agent, task_id, attempt, repeat)}/{RESULT_FILE}"


# A regrade verifies every run's work again into a staging tree beside the results, compares, and
# (`kotlin-bench regrade --apply`) moves the new results into place, keeping each changed run's previous one.
REGRADE_DIR = f"{RESULTS}/regrade"
REGRADE_CSV = f"{REGRADE_DIR}/changes.csv"
REGRADE_MD = f"{REGRADE_DIR}/changes.md"


def regrade_dir(agent: str, task_id: str, attempt: int | str) -> str:
    return f"{REGRADE_DIR}/runs/{agent}/{task_id}/attempt-{attempt}"


def regrade_result(agent: str, task_id: str, attempt: int | str) -> str:
    return f"{regrade_dir(agent, task_id, attempt)}/{RESULT_FILE}"


RESULT_FILE = "result.json"
RESULT_GLOB = f"*/*/attempt-*/{RESULT_FILE}"  # under runs_root(): the verdicts (repeat 1)
REPEAT_GLOB = "*/*/attempt-*/repeats/*/result.json"  # under runs_root(): the repeated verifications
REPEATS_DIR = "repeats"  # repeated verifications of a run: <run dir>/repeats/<r>/result.json
PREVIOUS_DIR = "previous"  # results a regrade replaced: <run dir>/previous/<n>/result.json
WORK_DIR = "work"
WORK_FILE = "work.json"
# Files of a run's work directory (besides work.json).
AGENT_DIFF = "agent.diff"
# the diff from the base commit to the agent's HEAD, when it committed (beside agent.diff): the published
# verifier restores the test patch's paths from that HEAD, so the fresh verifier makes it HEAD again
COMMITTED_DIFF = "committed.diff"
AGENT_LOG = "agent.log"
CAPTURE_LOG = "capture.log"  # git's messages while the agent's work was captured
PROXY_LOG = "proxy.log"
EGRESS_RECORD = "egress.jsonl"  # every request of the agent phase through the recording proxy (engine.egress)
AGENT_USAGE = "usage.json"  # a script agent's own usage, copied out of its container
AGENT_TRAJECTORY = "trajectory.json"  # a script agent's own trajectory (ATIF), copied out of its container
HARBOR_DIR = "harbor"  # a Harbor trial's staged task, jobs directory and log
# Files of a run directory (besides result.json and work/): the verification.
VERIFIER_LOG = "verifier.log"
VERIFIER_OUT = "verifier"  # the copied-out /logs/verifier
REWARD_TXT = "reward.txt"
REPORT_JSON = "report.json"
JUNIT_XML = "junit.xml"
TEST_OUTPUT_LOG = "test_output.log"
LEFTOVER_PROCESSES = "leftover_processes.txt"


# Validation: the three phases of a task (run, test, fix and its repetitions fix-<k>), each a record
# `phase.json` with the copied-out `/logs/phase` beside it, then the task's verdict and derived lists.
VALIDATION = f"{RESULTS}/validation"
VALIDATION_SUMMARY_CSV = f"{VALIDATION}/summary.csv"
VALIDATION_SUMMARY_MD = f"{VALIDATION}/summary.md"
PHASE_FILE = "phase.json"
PHASE_OUT = "phase"  # the copied-out /logs/phase: junit.xml, test_output.log, exit_code, problem
EXIT_CODE = "exit_code"
PHASE_PROBLEM = "problem"
VALIDATION_FILE = "validation.json"
DERIVED_EXPECTED = "expected_tests.json"  # the derived lists, beside validation.json


def validation_dir(task_id: str) -> str:
    return f"{VALIDATION}/{task_id}"


def validation_phase_dir(task_id: str, label: str) -> str:
    return f"{validation_dir(task_id)}/{label}"


def validation_phase(task_id: str, label: str) -> str:
    return f"{validation_phase_dir(task_id, label)}/{PHASE_FILE}"


def validation_verdict(task_id: str) -> str:
    return f"{validation_dir(task_id)}/{VALIDATION_FILE}"


def derived_expected(task_id: str) -> str:
    return f"{validation_dir(task_id)}/{DERIVED_EXPECTED}"


def validation_log(task_id: str, label: str) -> str:
    return log("validation", task_id, label)


def mirror_dir(owner: str, repo: str) -> str:
    return f"{RESULTS}/upstream/{owner}/{repo}"


# The harvest (`kotlin-bench harvest`, rules/harvest.smk): per repository, the ledger of screened pull
# requests, a directory per window (what was harvested) and per candidate (its tries on the base variants).
HARVEST = f"{RESULTS}/harvest"
HARVEST_RECORDS = f"{HARVEST}/records"  # the API's records read, laid out as materialization's issues cache
HARVEST_SCREENED = "screened.json"
HARVEST_SPEC = "dataset.json"  # the window's dated dataset specification of the accepted tasks
HARVEST_CONFIG = "config.yaml"  # a config that runs it: snakemake --configfile <it> --replace-workflow-config
HARVEST_TABLE = "candidates.csv"
HARVEST_PAGE = "harvest"  # .md and .html: what was harvested, accepted and rejected, and why
HARVEST_TASKS = "tasks"
HARVEST_EXPECTED = "expected"
HARVEST_WINDOW = r"[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{4}-[0-9]{2}-[0-9]{2}"


def harvest_repo(owner: str, repo: str) -> str:
    return f"{HARVEST}/{owner}/{repo}"


def harvest_ledger(owner: str, repo: str) -> str:
    """`<N>.json` per pull request screened (reused while it is unchanged)."""
    return f"{harvest_repo(owner, repo)}/pulls"


def harvest_window(owner: str, repo: str, window: str) -> str:
    return f"{harvest_repo(owner, repo)}/{window}"


def harvest_screened(owner: str, repo: str, window: str) -> str:
    return f"{harvest_window(owner, repo, window)}/{HARVEST_SCREENED}"


def harvest_spec(owner: str, repo: str, window: str) -> str:
    """The target of one repository's harvest of one window: its dated dataset specification."""
    return f"{harvest_window(owner, repo, window)}/{HARVEST_SPEC}"


def harvest_candidate(owner: str, repo: str, pr: int | str) -> str:
    return f"{harvest_repo(owner, repo)}/pr-{pr}"


def harvest_try(owner: str, repo: str, pr: int | str, variant: str) -> str:
    """A candidate on one base variant (the base image's tag): its task directory, image and phases."""
    return f"{harvest_candidate(owner, repo, pr)}/{variant}"


def harvest_task_stamp(owner: str, repo: str, pr: int | str, variant: str, task_id: str) -> str:
    return f"{harvest_try(owner, repo, pr, variant)}/{HARVEST_TASKS}/{task_id}/{STAMP}"


def harvest_image(owner: str, repo: str, pr: int | str, variant: str) -> str:
    return f"{harvest_try(owner, repo, pr, variant)}/image.json"


def harvest_phase(owner: str, repo: str, pr: int | str, variant: str, label: str) -> str:
    return f"{harvest_try(owner, repo, pr, variant)}/{label}/{PHASE_FILE}"


def harvest_probe(owner: str, repo: str, pr: int | str, variant: str) -> str:
    """Whether the candidate builds on the variant (its image, and the run and fix phases' results)."""
    return f"{harvest_try(owner, repo, pr, variant)}/probe.json"


def harvest_verdict(owner: str, repo: str, pr: int | str) -> str:
    return f"{harvest_candidate(owner, repo, pr)}/verdict.json"


def reproduce_output(agent: str, suffix: str) -> str:
    return f"{REPRODUCE_DIR}/{agent}{suffix}"


def network_check(task_id: str) -> str:
    """The health check's network probe of one task's agent phase (`kotlin_bench.runs.network_probe`)."""
    return f"{HEALTHCHECK_DIR}/network/{task_id}.json"


def log(*parts: str) -> str:
    """`results/logs/<part>/.../<last>.log`."""
    return "/".join((LOGS, *parts)) + ".log"


def solve_log(agent: str, task_id: str, attempt: int | str) -> str:
    return log("solve", agent, task_id, f"attempt-{attempt}")


def verify_log(agent: str, task_id: str, attempt: int | str, repeat: int | str = 1) -> str:
    last = f"attempt-{attempt}" if str(repeat) == "1" else f"attempt-{attempt}-repeat-{repeat}"
    return log("verify", agent, task_id, last)


def tries_log(step_log: str) -> str:
    """Each failed try of a job, one line each, beside its log (Snakemake clears a job's log before a
    retry): `<log>.tries`."""
    return f"{step_log}.tries"


# --------------------------------------------------------------------------- committed files of a checkout

BENCHMARK_SPEC = "dataset/kotlin-bench.json"  # the 106 tasks (relative to the repository root)
LEADERBOARD_CSV = "reference/leaderboard.csv"  # the published leaderboard's rows
LEADERBOARD_CONFIGS = "config/leaderboard"  # one generated config per runnable leaderboard row

# --------------------------------------------------------------------------- task directories

STAMP = ".materialized.json"
MISSING_EXPECTED_MARKER = "tests/.expected_tests_missing"
EXPECTED_TESTS = "tests/expected_tests.json"
INSTRUCTION = "instruction.md"
FIX_PATCH = "solution/fix.patch"
SOLVE_SCRIPT = "solution/solve.sh"
TEST_PATCH = "tests/test.patch"
WARMUP_PATCH = "environment/warmup.patch"  # for tasks whose warm-up applies a patch
# Written by materialization, represented in the DAG by the task's stamp (never listed as inputs).
MATERIALIZED = frozenset(
    {FIX_PATCH, TEST_PATCH, EXPECTED_TESTS, MISSING_EXPECTED_MARKER, INSTRUCTION, STAMP, WARMUP_PATCH}
)


# Written by every materialization (the DAG lists them as its outputs, so that the steps that read one
# depend on it exactly; a task without expected lists gets the marker and a placeholder that scores 0).
MATERIALIZED_OUTPUTS = (INSTRUCTION, FIX_PATCH, TEST_PATCH, EXPECTED_TESTS)


def stamp(tasks_dir: str, task_id: str) -> str:
    """The materialization stamp: the DAG node that stands for a task's upstream-authored files."""
    return f"{tasks_dir}/{task_id}/{STAMP}"


def task_file(tasks_dir: str, task_id: str, rel: str) -> str:
    """A file of a task directory, relative to the workflow directory."""
    return f"{tasks_dir}/{task_id}/{rel}"


# --------------------------------------------------------------------------- inside task containers

CONTAINER_VERIFIER_LOGS = "/logs/verifier"
CONTAINER_TESTS = "/tests"
CONTAINER_SOLUTION = "/solution"
CONTAINER_AGENT_SCRIPT_DIR = "/tmp/kotlin-bench-agent-script"
CONTAINER_CAPTURE_DIR = "/tmp/kotlin-bench-capture"
CONTAINER_PHASE_LOGS = "/logs/phase"
CONTAINER_PROBE_DIR = "/tmp/kotlin-bench-probe"
# A Harbor trial's agent phase on the record (kotlin_bench.runs.agents.harbor_phase): the gate Harbor's
# healthcheck waits on, the phase's environment (BASH_ENV), the collect hook's handshake
CONTAINER_TRIAL_DIR = "/tmp/kotlin-bench-trial"

# --------------------------------------------------------------------------- labels and keys

LABEL_RUN = "kotlin-bench.run"
LABEL_TASK = "kotlin-bench.task"
LABEL_AGENT = "kotlin-bench.agent"
LABEL_PHASE = "kotlin-bench.phase"
LABEL_WORKDIR = "kotlin-bench.workdir"
LABEL_ROLE = "kotlin-bench.role"
LABEL_NPROC = "kotlin-bench.nproc"  # RLIMIT_NPROC of every command, where the engine has no pids limit
# Docker Compose's labels on what it starts (Harbor's trials run under `docker compose`): the project, and
# the project directory (Harbor's is the staged task's environment/ folder, in the run's work directory).
LABEL_COMPOSE_PROJECT = "com.docker.compose.project"
LABEL_COMPOSE_WORKING_DIR = "com.docker.compose.project.working_dir"
LABEL_COMPOSE_SERVICE = "com.docker.compose.service"

# --------------------------------------------------------------------------- files of the package

PACKAGE = Path(__file__).resolve().parents[1]
VERIFIER_DIR = PACKAGE / "scoring" / "verifier"  # bash + Python stdlib, copied into every task's tests/
TEMPLATES_DIR = PACKAGE / "dataset" / "templates"  # shared task scripts and Dockerfile templates
DATASET_SCHEMA = PACKAGE / "dataset" / "schemas" / "dataset.schema.json"
PROXY_DIR = PACKAGE / "engine" / "proxy"  # the egress proxy's image recipe
# The workspace's interception CA of recorded allowlist phases (kotlin_bench.engine.egress.ensure_ca),
# made once; the file names are mitmproxy's own (its confdir).
EGRESS_CA_DIR = f"{RESULTS}/egress-ca"
EGRESS_CA_KEYPAIR = "mitmproxy-ca.pem"
EGRESS_CA_CERT = "mitmproxy-ca-cert.pem"
PROBES_DIR = PACKAGE / "runs" / "probes"  # scripts the health check runs in task containers
HANDOFF_SCRIPT = PACKAGE / "runs" / "handoff.sh"


def workdir_tag(workdir: Path | None = None) -> str:
    """8 hex digits naming the workflow directory (part of every container key): two checkouts never
    reap each other's containers."""
    return hashlib.sha256(str((workdir or Path.cwd()).resolve()).encode()).hexdigest()[:8]


def run_key(agent: str, task_id: str, attempt: int | str, workdir: Path | None = None) -> str:
    """The key of a run's containers and networks (label `kotlin-bench.run`)."""
    return f"{agent}.{task_id}.{attempt}.{workdir_tag(workdir)}"


def verify_key(agent: str, task_id: str, attempt: int | str, repeat: int | str = 1) -> str:
    """The key of one verification's container (each repeat, and a regrade's, has its own: they may run
    at once)."""
    return run_key(agent, task_id, f"{attempt}v{repeat}")


def dir_lock(directory: Path) -> Path:
    """The lock a job holds while it works on `directory` (`kotlin_bench.runs.runner.exclusive`):
    `.<name>.lock` beside it."""
    return directory.parent / f".{directory.name}.lock"


# Snakemake's own lock of a workflow directory (`snakemake --unlock` clears one left by a killed Snakemake),
# and the folder of the scripts its jobs run (a running job's command line names one).
SNAKEMAKE_LOCKS = ".snakemake/locks"
SNAKEMAKE_SCRIPTS = ".snakemake/scripts"


def validation_key(task_id: str, label: str) -> str:
    """The key of one validation phase's container."""
    return run_key(f"validation-{label}", task_id, 0)


def probe_key(task_id: str) -> str:
    """The key of the health check's network probe of a task."""
    return run_key("healthcheck", task_id, 1)


# --------------------------------------------------------------------------- the stand-in Maven repository

# The examples' stand-in Maven repository on this host (kotlin_bench.tools.standin_repo,
# scripts/standin_repo.sh; docs/standin-repo.md): its host name, base URL, state directory (config,
# content, logs, pid; one per machine), the group of the example projects' own releases, and the committed
# inputs (paths relative to a checkout).
STANDIN_HOST = "repo.examples.test"
STANDIN_PATH = "/maven2/"
STANDIN_BASE_URL = f"https://{STANDIN_HOST}{STANDIN_PATH}"
STANDIN_STATE_DIR = Path("/var/lib/kotlin-bench/standin-repo")
STANDIN_GROUP = "examples"
STANDIN_CA = "examples/bases/toolchain/standin-ca.crt"
STANDIN_TLS_DIR = "examples/standin-repo/tls"
STANDIN_THIRD_PARTY = "examples/standin-repo/third-party.txt"
STANDIN_BUILDS = "examples/standin-repo/builds.txt"  # development builds and bundles (carriers)
STANDIN_PROJECTS_GLOB = "examples/bases/*/upstream"  # each project with an upstream history is published
