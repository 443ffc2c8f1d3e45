#!/usr/bin/env bash
# Install the `harbor` CLI (Python >= 3.12, its own venv) and the `docker compose` v2 plugin it needs.
# The version is HARBOR_VERSION (default: the one the tests run against, below); a venv holding another
# version is upgraded in place.
# Usage: scripts/setup_harbor.sh [PREFIX]   (default PREFIX: .harbor) -> PREFIX/venv/bin/harbor,
# and PREFIX/docker-config/cli-plugins/docker-compose; export DOCKER_CONFIG=PREFIX/docker-config to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-.harbor}")
version=${HARBOR_VERSION:-0.26.0}
mkdir -p "$prefix"

py=${HARBOR_PYTHON:-}
if [ -z "$py" ]; then
  for candidate in python3.13 python3.12; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      py=$candidate; break
    fi
  done
fi
if [ -z "$py" ] && command -v pyenv >/dev/null 2>&1; then
  v=$(pyenv versions --bare | grep -E '^3\.1[2-9]' | head -n 1 || true)
  [ -n "$v" ] && py="$(pyenv root)/versions/$v/bin/python3"
fi
[ -n "$py" ] || { echo "setup_harbor: Harbor needs Python >= 3.12; set HARBOR_PYTHON" >&2; exit 1; }

installed=$("$prefix/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("harbor"))' 2>/dev/null || true)
if [ "$installed" != "$version" ]; then
  echo "setup_harbor: harbor==$version into $prefix/venv (with $py)${installed:+, replacing $installed}"
  [ -x "$prefix/venv/bin/pip" ] || "$py" -m venv "$prefix/venv"
  "$prefix/venv/bin/pip" install -q --disable-pip-version-check "harbor==$version"
fi

plugins="$prefix/docker-config/cli-plugins"
if ! DOCKER_CONFIG="$prefix/docker-config" docker compose version >/dev/null 2>&1; then
  if docker compose version >/dev/null 2>&1 && [ -z "${HARBOR_FORCE_COMPOSE:-}" ]; then
    echo "setup_harbor: using the system's docker compose plugin"
    mkdir -p "$plugins"
    for dir in /usr/libexec/docker/cli-plugins /usr/lib/docker/cli-plugins /usr/local/lib/docker/cli-plugins; do
      [ -x "$dir/docker-compose" ] && ln -sf "$dir/docker-compose" "$plugins/docker-compose" && break
    done
  else
    # Debian bookworm has no compose v2; trixie's docker-compose package is that plugin and runs here.
    echo "setup_harbor: fetching the compose v2 plugin from Debian trixie (apt-get download)"
    apt_dir="$prefix/apt"
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$plugins"
    mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
    mirror=${mirror:-$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
    [ -n "$mirror" ] || { echo "setup_harbor: cannot find this host's Debian mirror" >&2; exit 1; }
    printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$mirror" >"$apt_dir/trixie.sources"
    opts=(-o "Dir::Etc::SourceList=$apt_dir/trixie.sources" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
    apt-get "${opts[@]}" update -qq
    (cd "$apt_dir" && apt-get "${opts[@]}" download docker-compose >/dev/null)
    dpkg -x "$(ls "$apt_dir"/docker-compose_*.deb | head -n 1)" "$apt_dir/x"
    cp "$apt_dir/x/usr/libexec/docker/cli-plugins/docker-compose" "$plugins/docker-compose"
  fi
fi
echo "setup_harbor: $("$prefix/venv/bin/harbor" --version 2>/dev/null || echo harbor) ready;" \
  "compose $(DOCKER_CONFIG="$prefix/docker-config" docker compose version --short)"
