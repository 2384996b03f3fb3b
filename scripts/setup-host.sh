#!/usr/bin/env bash
# Host set-up for tests and local runs (Debian 12, as root): Podman with runc and debootstrap, the
# containers.conf this kind of VM needs, the local sandbox image, and shellcheck (the triage tests run it on
# a broken script). Idempotent; quiet when done.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages ------------------------------------------------------------------------------
packages=(podman runc catatonit debootstrap shellcheck)
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
