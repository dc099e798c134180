#!/usr/bin/env bash
# `make wheel-gate` (part of `make test`): Isoscope as a user installs it. A new venv in a temporary folder outside
# the checkout holding the CPU torch and the wheel alone (scripts/wheel_venv.sh), then tests/wheel: from an empty
# folder, the README's quickstart commands on small inputs (its blocks as written with
# ISOSCOPE_WHEEL_README=1: make wheel-gate-readme), every command once, the export in each format, every page of the app,
# the missing extras named in one line. Prints the gate's time as its last line. PYTEST: the pytest that drives it;
# arguments go to it (scripts/wheel_gate.sh -k pages).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTEST="${PYTEST:-.venv/bin/pytest}"
start=$(date +%s)
tmp="$(mktemp -d -t isoscope-wheel-gate.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
bash scripts/wheel_venv.sh "$tmp/venv"
installed=$(date +%s)
status=0
ISOSCOPE_WHEEL_VENV="$tmp/venv" "$PYTEST" tests/wheel -q -n 0 -p no:cacheprovider --basetemp="$tmp/pytest" \
  -s --durations=0 --durations-min=5 "$@" || status=$?  # -s: each command's and page's seconds; "$@": e.g. -k pages
end=$(date +%s)
times > "$tmp/times"  # user and system CPU of every process the gate ran: its cost on a machine shared with others
cpu="$(tail -n 1 "$tmp/times")"
echo "wheel gate: $((end - start)) s (the wheel built and installed in a new venv: $((installed - start)) s; commands and pages from an empty folder: $((end - installed)) s; CPU user, system: ${cpu/ /, })"
exit "$status"
