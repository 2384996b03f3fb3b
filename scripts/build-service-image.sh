#!/usr/bin/env bash
# Build a runnable image of the service on a machine without container-registry access (the production
# Containerfile needs a Fedora base from a registry). Layers, each built once per content hash of its inputs:
#   base  localhost/hummingbird-sandbox   Debian bookworm from debootstrap (python3 3.11), sandbox-image/
#   deps  localhost/hummingbird-agent-deps every line of runtime-packages.txt (the list the Containerfile
#                                          installs as RPMs and wheels), as the pinned wheels of constraints.txt,
#                                          --no-deps, installed by the host .venv's pip (same CPython minor 3.11,
#                                          glibc manylinux wheels) into a --target dir
#   app   localhost/hummingbird-agent      hummingbird_agent/, workflows/ and config.yaml at /app, USER 65532;
#                                          config.yaml gets scripts/container-config.sed, as in the Containerfile;
#                                          then scripts/image_start_check.py runs in it, as in the Containerfile
# Nothing is pip-installed at run time, and `podman build` runs with --network=none --pull=never.
# Prints the image name on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE="${HB_SERVICE_IMAGE:-localhost/hummingbird-agent:latest}"
DEPS_REPO="${HB_SERVICE_DEPS_IMAGE:-localhost/hummingbird-agent-deps}"
BASE="${HB_SANDBOX_IMAGE:-localhost/hummingbird-sandbox:latest}"
PY="${HB_VENV:-.venv}/bin/python"
SITE=/usr/local/lib/python3.11/dist-packages  # on Debian python3's default sys.path

# One build at a time (parallel test runs share the image store).
exec 9>/var/tmp/hummingbird-service-image.lock
flock 9

bash sandbox-image/build-local.sh >&2
base_id="$(podman image inspect --format '{{.Id}}' "$BASE")"

label() { podman image inspect --format '{{index .Labels "io.hummingbird.inputs"}}' "$1" 2>/dev/null || true; }
# A deterministic tar of the app files: equal trees give equal hashes whatever their mtimes.
app_tar() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=a+rX,go-w \
    --exclude=__pycache__ --exclude='*.pyc' -cf - hummingbird_agent workflows config.yaml scripts/container-config.sed
}

# The deps layer's recipe; its hash (with the dependency files and the base) keys the layer, so editing
# other parts of this script does not reinstall the dependencies.
PIP_FLAGS=(--only-binary=:all: --no-deps -c constraints.txt)
DEPS_CONTAINERFILE="FROM $BASE
COPY site/ $SITE/"
deps_hash="$( (cat pyproject.toml constraints.txt runtime-packages.txt scripts/runtime_packages.py
  echo "${PIP_FLAGS[*]} $DEPS_CONTAINERFILE $base_id") | sha256sum | cut -c1-16)"
APP_CONTAINERFILE="FROM $DEPS_REPO:$deps_hash
COPY app/ /app/
# The root filesystem is read-only in the cluster: temporary files go to the /tmp volume.
ENV HOME=/tmp TMPDIR=/tmp PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
USER 65532
# The start check, as in the Containerfile; the script and the module list are mounted, not copied.
RUN --mount=type=bind,source=check,target=/run/check \\
    python3 /run/check/image_start_check.py --modules-from /run/check/modules.txt
CMD [\"python3\", \"-m\", \"hummingbird_agent\", \"serve\"]"
app_hash="$( (app_tar; cat scripts/image_start_check.py runtime-packages.txt; echo "$APP_CONTAINERFILE") \
  | sha256sum | cut -c1-16)"
if [ "$(label "$IMAGE")" = "$app_hash" ]; then
  echo "$IMAGE"
  exit 0
fi

ctx="$(mktemp -d /var/tmp/hb-service-image.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT

if [ "$(label "$DEPS_REPO:$deps_hash")" != "$deps_hash" ]; then
  echo "build-service-image: installing runtime dependencies (inputs $deps_hash)" >&2
  # Every runtime package, at the version constraints.txt pins; refused when a dependency has no line.
  "$PY" scripts/runtime_packages.py all >"$ctx/requirements.txt"
  if ! "$PY" -m pip install --quiet --disable-pip-version-check --no-input "${PIP_FLAGS[@]}" \
    -r "$ctx/requirements.txt" --target "$ctx/site" >"$ctx/pip.log" 2>&1; then
    grep -v '^WARNING: Location' "$ctx/pip.log" | tail -n 20 >&2
    echo "build-service-image: pip install of the runtime dependencies failed" >&2
    exit 1
  fi
  rm -rf "$ctx/site/bin"
  printf '%s\nLABEL io.hummingbird.inputs=%s\n' "$DEPS_CONTAINERFILE" "$deps_hash" >"$ctx/Containerfile"
  podman build --quiet --network=none --pull=never -t "$DEPS_REPO:$deps_hash" -f "$ctx/Containerfile" "$ctx" >/dev/null
  rm -rf "$ctx/site"
  # Superseded dependency layers (other hashes) only take space; one still in use is kept.
  podman images --format '{{.Repository}}:{{.Tag}}' "$DEPS_REPO" | grep -vx "$DEPS_REPO:$deps_hash" \
    | xargs -r podman rmi >/dev/null 2>&1 || true
fi

echo "build-service-image: building $IMAGE (inputs $app_hash)" >&2
old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
mkdir -p "$ctx/app"
app_tar | tar -xf - -C "$ctx/app"
sed -i -f "$ctx/app/scripts/container-config.sed" "$ctx/app/config.yaml"
rm -r "$ctx/app/scripts"
mkdir "$ctx/check"
cp scripts/image_start_check.py "$ctx/check/"
"$PY" scripts/runtime_packages.py modules >"$ctx/check/modules.txt"
printf '%s\nLABEL io.hummingbird.inputs=%s\n' "$APP_CONTAINERFILE" "$app_hash" >"$ctx/Containerfile"
if ! podman build --network=none --pull=never -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >"$ctx/build.log" 2>&1; then
  tail -n 40 "$ctx/build.log" >&2
  echo "build-service-image: building $IMAGE (with the image start check in it) failed" >&2
  exit 1
fi
grep '^image start check' "$ctx/build.log" >&2 || true
new_id="$(podman image inspect --format '{{.Id}}' "$IMAGE")"
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
  podman rmi "$old_id" >/dev/null 2>&1 || true  # the superseded build, now untagged
fi
echo "build-service-image: built $IMAGE" >&2
echo "$IMAGE"
