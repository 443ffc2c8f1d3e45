"""The results site: static pages under `results/site/` that open from disk (no server).

- `index.html`: the headline, rate tables (Wilson intervals, tokens, cost, agent time), the paired
  comparisons of the agents, and the task x agent grid of every attempt, coloured by outcome and
  filterable by repository, agent and reason;
- `runs/<agent>/<task>/attempt-<k>.html`: one run (instruction, the agent's diff, expected against landed
  tests with the names that did not pass, the capture record and flags, log tails linking the whole
  logs, timings, tokens and cost, Harbor's trajectory where there is one);
- `tasks/<task>.html`: one task across agents; `compare/<a>--<b>.html`: one pair of agents.

Pages are Jinja2 templates (`templates/`) filled from `pages`; `build` writes only the pages whose inputs
changed (rule `site`).
"""
