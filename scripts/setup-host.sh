#!/usr/bin/env bash
# Host set-up for tests and local runs (Debian 12, as root): Podman with runc and debootstrap, the
# containers.conf this kind of VM needs, the local sandbox image, and the compilers, linters and test runners
# the triage tests run on small broken inputs (tests/triage/real_tools.py: shellcheck, Go, Cargo, CMake's ctest,
# PHPUnit, RSpec, JUnit 4 and 5 with a JDK, prove; jest, mocha, tsc and eslint from npm, pinned in
# tests/triage/tools/package.json). Idempotent; quiet when done.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages ------------------------------------------------------------------------------
packages=(podman runc catatonit debootstrap shellcheck
          gcc g++ golang-go cargo cmake phpunit ruby-rspec junit4 junit5 openjdk-17-jdk-headless perl)
# Node.js: the machine's own when it has one (a newer build than Debian's), else Debian's with npm.
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-host: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- npm test tools (installed again only when the pinned versions change) ---------------------------
tools=tests/triage/tools
if ! cmp -s "$tools/package-lock.json" "$tools/node_modules/.installed-lock.json" 2>/dev/null; then
  echo "setup-host: installing the npm test tools"
  npm ci --prefix "$tools" --no-audit --no-fund --loglevel=error >/dev/null
  cp "$tools/package-lock.json" "$tools/node_modules/.installed-lock.json"
fi

# --- Podman engine config -------------------------------------------------------------------------
# Root here lacks CAP_SYS_RESOURCE, so Podman's default ulimits (nofile 1048576) cannot be set, and
# crun rejects the hybrid cgroup v1 layout; runc with explicit ulimits works.
conf=/etc/containers/containers.conf
want='[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
  mkdir -p /etc/containers
  printf '%s\n' "$want" >"$conf"
  echo "setup-host: wrote $conf"
fi

# --- sandbox image (rebuilt only when its inputs change) ------------------------------------------
bash sandbox-image/build-local.sh
echo "setup-host: ok"
