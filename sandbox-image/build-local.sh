#!/usr/bin/env bash
# Build the local sandbox image from Debian packages (debootstrap + podman import), for machines
# without registry access. Rebuilds only when the inputs' content hash differs from the image label.
set -euo pipefail
cd "$(dirname "$0")"
IMAGE="${HB_SANDBOX_IMAGE:-localhost/hummingbird-sandbox:latest}"
MIRROR="${HB_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
HASH="$(cat build-local.sh packages.txt sandbox-init sandbox_server.py | sha256sum | cut -c1-16)"

current="$(podman image inspect --format '{{index .Labels "io.hummingbird.inputs"}}' "$IMAGE" 2>/dev/null || true)"
if [ "$current" = "$HASH" ]; then
  exit 0
fi
echo "sandbox-image: building $IMAGE (inputs $HASH)"
rootfs="$(mktemp -d /var/tmp/hb-sandbox-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
pkgs="$(grep -v '^#' packages.txt | grep -v '^$' | paste -sd, -)"
debootstrap --variant=minbase --include="$pkgs" bookworm "$rootfs" "$MIRROR" >/dev/null
# No package manager at runtime: the sandbox has no network, and apt would only widen its surface.
chroot "$rootfs" dpkg --purge apt >/dev/null
rm -rf "$rootfs"/var/cache/apt "$rootfs"/var/lib/apt/lists "$rootfs"/var/log/* "$rootfs"/usr/share/doc \
  "$rootfs"/usr/share/man "$rootfs"/usr/share/locale
echo 'sandbox:x:65532:65532:sandbox:/tmp/data:/usr/sbin/nologin' >>"$rootfs/etc/passwd"
echo 'sandbox:x:65532:' >>"$rootfs/etc/group"
# Mount point of the working-directory tmpfs; it must exist because the root is read-only.
mkdir -p "$rootfs/tmp/data" && chmod 1777 "$rootfs/tmp/data"
# PID 1 and its command server side by side; the script finds the module next to its real path.
install -D -m 0755 -t "$rootfs/usr/local/lib/sandbox-init" sandbox-init sandbox_server.py
ln -s ../lib/sandbox-init/sandbox-init "$rootfs/usr/local/bin/sandbox-init"
chroot "$rootfs" python3 -m compileall -q /usr/local/lib/sandbox-init >/dev/null  # the root is read-only at run time
tar -C "$rootfs" -c . | podman import --quiet \
  --change 'USER=65532:65532' \
  --change 'WORKDIR=/tmp/data' \
  --change 'ENV=HOME=/tmp/data' \
  --change 'ENV=TMPDIR=/tmp/data' \
  --change 'CMD=["/usr/local/bin/sandbox-init"]' \
  --change "LABEL=io.hummingbird.inputs=$HASH" \
  - "$IMAGE" >/dev/null
echo "sandbox-image: built $IMAGE"
