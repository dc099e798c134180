#!/usr/bin/env bash
# Make Debian's chromium available for the real-browser tests (tests/e2e). Installs it with apt when it is
# missing and we are root; otherwise says why the e2e tests will be skipped (or fail, under CI=true).
set -u
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian chromium for the browser tests..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq chromium fonts-dejavu-core >/dev/null && exit 0
  echo "could not install chromium with apt" >&2
else
  echo "chromium is missing and cannot be installed here (not root or no apt): e2e tests will be skipped" >&2
fi
[ "${CI:-}" = "true" ] && exit 1
exit 0
