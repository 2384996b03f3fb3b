#!/usr/bin/env bash
# The compilers, linters and test runners the triage tests run on small broken inputs (tests/triage/real_tools.py:
# shellcheck, gcc, Go, Cargo, CMake's ctest, PHPUnit, RSpec, JUnit 4 and 5 with a JDK, prove; jest, mocha, tsc and
# eslint from npm, pinned in tests/triage/tools/package.json). For `make test` only: the service needs none of them.
# Idempotent; quiet when nothing is left to do; says what it installs before installing it.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(shellcheck gcc g++ golang-go cargo cmake phpunit ruby-rspec junit4 junit5 openjdk-17-jdk-headless perl)
# Node.js: the machine's own when it has one (a newer build than Debian's), else Debian's with npm.
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-test-tools: will install the Debian packages ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm test tools, installed again only when the pinned versions change.
tools=tests/triage/tools
if ! cmp -s "$tools/package-lock.json" "$tools/node_modules/.installed-lock.json" 2>/dev/null; then
  echo "setup-test-tools: installing the npm test tools"
  npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >/dev/null
  cp "$tools/package-lock.json" "$tools/node_modules/.installed-lock.json"
fi
