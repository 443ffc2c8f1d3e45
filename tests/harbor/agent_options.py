"""Run by Harbor's own Python (tests/test_leaderboard_configs.py): build each agent the way `harbor run`
does from `-a`, `-m` and the `--ak key=value` arguments (Harbor's kwarg parser, its preflight, the agent
class and its option model), and print what Harbor would do about web search, as JSON.

Input (stdin): a JSON list of {"agent": ..., "model": ..., "ak": ["key=value", ...]}.
Output (stdout): a JSON list of {"options": {...}, "native_web_tools": bool, "cli_flags": "...",
"settings_tools": ...} in the same order. No network, no credentials, no container.
"""

import json
import sys
import tempfile
from pathlib import Path

from harbor.agents.factory import AgentFactory
from harbor.cli.utils import parse_kwargs
from harbor.models.trial.config import AgentConfig

found = []
for entry in json.load(sys.stdin):
    kwargs = parse_kwargs(entry["ak"])
    config = AgentConfig(name=entry["agent"], model_name=entry["model"], kwargs=kwargs)
    AgentFactory.run_preflight(config, skip_credential_checks=True)
    cls = AgentFactory.get_agent_class_from_config(config)
    agent = cls(logs_dir=Path(tempfile.mkdtemp()), model_name=entry["model"], **kwargs)
    settings = None
    if hasattr(agent, "_build_settings_config"):  # gemini-cli writes its tool exclusions to settings.json
        settings, _alias = agent._build_settings_config(entry["model"].split("/", 1)[-1])
    found.append(
        {
            "options": agent.options.model_dump(mode="json") if agent.options else None,
            "native_web_tools": cls.capabilities.native_web_tools,
            "cli_flags": agent.build_cli_flags(),
            "settings_tools": (settings or {}).get("tools"),
        }
    )
json.dump(found, sys.stdout)
