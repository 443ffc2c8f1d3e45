"""Starts mitmdump in the recording egress proxy (runs inside the proxy container: stdlib and mitmproxy
only; `kotlin_bench.engine.egress` copies it beside the addon and runs it with mitmdump's arguments).

mitmdump loads every default addon, and two of them import what this proxy never uses: the onboarding app
(Flask and Werkzeug, serving `mitm.it`) and proxy authentication (passlib, ldap3): about half of its
start-up, which every allowlist phase waits for. Both are replaced by stand-ins that declare the same
options (so that mitmdump's command line parses as before) and do nothing: no onboarding app (a request
for `mitm.it` is judged by the allowlist like any other) and no proxy authentication (`proxyauth` unset,
as it was).
"""

from __future__ import annotations

import sys
import types
from typing import Any, Optional  # mitmproxy 8 checks option types with typing's Optional


def stand_in(module: str, name: str, options: list[tuple[str, Any, Any, str]]) -> None:
    """An addon module whose addon only declares `options` (name, type, default, help)."""

    def load(_self: object, loader: Any) -> None:
        for option in options:
            loader.add_option(*option)

    stub = types.ModuleType(f"mitmproxy.addons.{module}")
    setattr(stub, name, type(name, (), {"load": load}))
    sys.modules[stub.__name__] = stub


stand_in(
    "onboarding",
    "Onboarding",
    [
        ("onboarding", bool, False, "no onboarding app in this proxy"),
        ("onboarding_host", str, "mitm.it", "unused"),
        ("onboarding_port", int, 80, "unused"),
    ],
)
stand_in("proxyauth", "ProxyAuth", [("proxyauth", Optional[str], None, "no proxy authentication")])  # noqa: UP045

from mitmproxy.tools.main import mitmdump  # noqa: E402  (after the stand-ins)

sys.exit(mitmdump(sys.argv[1:]))
