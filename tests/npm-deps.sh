#!/usr/bin/env bash
# Installs the pinned npm test peers (tests/npm/package.json + package-lock.json) into
# tests/npm/node_modules, and the Kubernetes schema models tests/deploy/manifests.sh uses
# (tests/deploy/npm), each once per lock file content.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for dir in "$here/npm" "$here/deploy/npm"; do
  [ -f "$dir/package.json" ] || continue
  (
    cd "$dir"
    stamp=node_modules/.gg-lock-stamp
    want=$(sha256sum package.json package-lock.json 2>/dev/null | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
    if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error >&2; else npm install --no-audit --no-fund --loglevel=error >&2; fi
    echo "$want" > "$stamp"
  )
done
