#!/usr/bin/env bash
# scripts/wheel_venv.sh VENV [EXTRAS]: a new venv holding what a user's `pip install` gives and nothing else: the
# CPU torch first (as the README says; here the wheel on disk), then the wheel built from this checkout (with
# EXTRAS, e.g. notebook), its dependencies resolved anew from pyproject.toml's ranges (from the local registries
# when offline), never from requirements*.txt. Writes VENV/freeze.txt. `make wheel-gate` and `make test-fresh` use it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$1"
extras="${2:+[$2]}"
PYTHON="${PYTHON:-python3}"
pip_fast=(-q --no-compile --disable-pip-version-check)  # pip's byte-compiling of torch and the rest: 2 CPU-minutes

rm -rf "$venv"
"$PYTHON" -m venv "$venv"
dist="$(mktemp -d)"
trap 'rm -rf "$dist"' EXIT
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$dist" .  # as `pip install .` builds it (isolated setuptools)
wheels=("$dist"/isoscope-*.whl)
"$venv/bin/pip" install "${pip_fast[@]}" torch==2.13.0
"$venv/bin/pip" install "${pip_fast[@]}" "${wheels[0]}$extras"
"$venv/bin/pip" freeze > "$venv/freeze.txt"
echo "$venv: $(basename "${wheels[0]}")$extras and $(grep -vc '^isoscope' "$venv/freeze.txt") packages it pulled (freeze.txt)"
