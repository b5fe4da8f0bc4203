#!/usr/bin/env bash
# Installs what graphgate needs to build and test on Debian 12, only when missing.
# Used by tests/run-all and deploy/demo; safe to run again.
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config curl ca-certificates
      libmicrohttpd-dev libjansson-dev libsqlite3-dev libyaml-dev libsodium-dev libpcre2-dev
      libcurl4-openssl-dev check wrk nginx-light
      libjose-dev libssl-dev # JOSE for OAuth access tokens (src/auth/jwt.c); OpenSSL for its tests
      libzstd-dev zstd # the history's compressed rows (src/store/history_body.c); the CLI for tests that search them
      libpq-dev postgresql-15 postgresql-common # the PostgreSQL backend and its tests (pg_virtualenv)
      clang libclang-rt-14-dev # clang + libFuzzer: tests/fuzz/run.sh
      chromium) # chromium: the web console's browser test (tests/console/browser.sh)
# Node may come from elsewhere (nodesource); only ask Debian for it when there is none.
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
# groff: tests/integration/manpages.sh formats the man pages with warnings on (groff -ww).
pkgs+=(groff-base)
# haproxy: tests/deploy/manifests.sh checks deploy/haproxy.cfg with haproxy -c; tests/gateway/replicas.sh
# runs it in front of three replicas.
pkgs+=(haproxy)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
