#!/usr/bin/env bash
# Host set-up for tests and local runs (Debian 12, as root): Podman with runc and debootstrap, the
# containers.conf this kind of VM needs, and the local sandbox image (the tools the tests run are
# scripts/setup-test-tools.sh's). Idempotent; quiet when nothing is left to do. It says what it will change before
# changing it. KEEP_PODMAN_CONF=1 leaves /etc/containers/containers.conf as it is (a host whose Podman already works).
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages ------------------------------------------------------------------------------
packages=(podman runc catatonit debootstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done

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
write_conf=no
if [ "${KEEP_PODMAN_CONF:-0}" != 1 ] && [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
  write_conf=yes
fi

# --- what will change, said before it changes -----------------------------------------------------
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup-host: will install the Debian packages ${missing[*]} (apt-get)"
fi
if [ "$write_conf" = yes ]; then
  echo "setup-host: will replace $conf with runc, cgroupfs, file events and lower ulimits" \
       "(the old file is kept as $conf.before-hummingbird; KEEP_PODMAN_CONF=1 leaves it alone)"
fi

if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "$write_conf" = yes ]; then
  mkdir -p /etc/containers
  if [ -e "$conf" ] && [ ! -e "$conf.before-hummingbird" ]; then
    cp -p "$conf" "$conf.before-hummingbird"
  fi
  printf '%s\n' "$want" >"$conf"
  echo "setup-host: wrote $conf"
fi

# --- sandbox image (rebuilt only when its inputs change; it says so before building) ---------------
bash sandbox-image/build-local.sh
echo "setup-host: ok"
