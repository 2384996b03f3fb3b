#!/usr/bin/env bash
# The documentation's browser test needs headless Chromium from Debian (as root). Idempotent; quiet when done.
# It says what it installs before installing it, and waits for another apt run to finish instead of failing.
set -euo pipefail
if dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q 'ok installed'; then
  exit 0
fi
echo "setup-browser: installing the Debian package chromium (the documentation's browser test)"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=900 update -qq
apt-get -o DPkg::Lock::Timeout=900 install -y -qq chromium >/dev/null
echo "setup-browser: ok"
