#!/usr/bin/env bash
# House style: a module over 500 lines fails the build (over 400 asks for a review).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while read -r n f; do
  if [ "$f" != "total" ] && [ "$n" -gt 500 ]; then
    echo "module too large: $f has $n lines (limit 500)"
    status=1
  fi
done < <(find hummingbird_agent -name '*.py' -print0 | xargs -0 wc -l)
exit $status
