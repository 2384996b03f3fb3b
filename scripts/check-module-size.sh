#!/usr/bin/env bash
# House style: a module over 300 lines fails the build; split it at a real boundary.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=300
status=0
while read -r n f; do
  if [ "$f" != "total" ] && [ "$n" -gt "$limit" ]; then
    echo "module too large: $f has $n lines (limit $limit)"
    status=1
  fi
done < <(find hummingbird_agent sandbox-image -name '*.py' -print0 | xargs -0 wc -l; wc -l sandbox-image/sandbox-init)
exit $status
