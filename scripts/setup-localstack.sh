#!/usr/bin/env bash
# LocalStack (SQS, SNS, S3) for the second AWS backend of the tests: localstack-core in its own venv
# (.venv-localstack), since it needs Python >= 3.13 and pins that clash with the service's own packages.
# Idempotent: a stamp of the pins skips the install when nothing changed. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${LOCALSTACK_VENV:-.venv-localstack}
# localstack-core 2026.3.0 claims Python >= 3.10 but imports warnings.deprecated (new in 3.13); on older
# versions the import error shows only as "No component plugins found".
base=${LOCALSTACK_PYTHON:-}
if [ -z "$base" ]; then
  for candidate in python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
      base=$candidate
      break
    fi
  done
fi
# Without these pins the 2026.3.0 release fails on its own imports.
pins=("localstack-core[runtime]==2026.3.0" "cbor2<6" "cryptography<45" "pyopenssl<25" "service-identity==24.2.0")
stamp="$venv/.installed-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-12)"
if [ ! -e "$stamp" ]; then
  if [ -z "$base" ]; then
    echo "setup-localstack: no Python >= 3.13 found (set LOCALSTACK_PYTHON)" >&2
    exit 1
  fi
  echo "setup-localstack: installing localstack-core into $venv" >&2
  test -x "$venv/bin/python" || "$base" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
echo "$venv/bin/python"
