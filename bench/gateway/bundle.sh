#!/usr/bin/env bash
# bench/gateway/bundle.sh — scaling.sh made portable to a machine that has none of its tools
# and reaches no registry (the many-core device machine of issue 31): graphgate, nginx, wrk,
# curl and taskset with every shared library they load, the loader they were linked against,
# the data folders graphgate reads (migrations, schema, specs) and the switch example, in one
# folder. Each program is started through the bundled loader (`ld-linux-x86-64.so.2
# --library-path LIB`), so nothing of the host's libraries is used but the kernel's vDSO.
#
# usage: bench/gateway/bundle.sh [BUILD_DIR (default build)] [OUT (default build-bundle)]
# then, on the other machine, from the repository's root (the checkout travels; OUT is
# ignored by git, so name it in the device tool's `carry`):
#   bash OUT/run.sh [SECONDS]        # = BENCH_CORES="1 2 4 8" scaling.sh with the bundle
# Environment of run.sh: what scaling.sh reads (BENCH_CORES, BENCH_ROUNDS, ...). python3,
# bash and coreutils/procps/util-linux's usual commands (awk, sed, lscpu, nproc) are taken
# from the host: the device machine has them.
#
# OUT/src/graphgate is a wrapper, so OUT serves as scaling.sh's BUILD_DIR. The loader makes
# /proc/self/exe the loader's own path (OUT/lib/...), which is why the data folders sit at
# OUT/ (graphgate looks for them at ../ of its executable's folder).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
out=${2:-$top/build-bundle}
example="$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml"
[ -x "$build/src/graphgate" ] || { echo "bundle: $build/src/graphgate not built"; exit 1; }
[ -f "$example" ] || { echo "bundle: npm peers missing (run tests/npm-deps.sh)"; exit 77; }
declare -A prog=([graphgate]="$build/src/graphgate")
for p in nginx wrk curl taskset; do
  prog[$p]=$(command -v "$p") || { echo "bundle: $p not installed"; exit 77; }
done

rm -rf "$out"
mkdir -p "$out/lib" "$out/libexec" "$out/bin" "$out/src"
loader=""
for p in "${!prog[@]}"; do
  cp -L "${prog[$p]}" "$out/libexec/$p"
  # ldd's lines: "name => /path (addr)" for libraries, "/path (addr)" for the loader
  while read -r lib; do
    case $lib in
      */ld-linux*) loader=$lib ;;
      /*) cp -Ln "$lib" "$out/lib/" ;;
    esac
  done < <(ldd "${prog[$p]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
[ -n "$loader" ] || { echo "bundle: no loader found by ldd"; exit 1; }
cp -L "$loader" "$out/lib/ld-linux-x86-64.so.2"

# bin/NAME: the program through the bundled loader, its own path as argv[0]
for p in "${!prog[@]}"; do
  cat >"$out/bin/$p" <<SH
#!/bin/sh
d=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$d/lib" --argv0 "\$d/libexec/$p" "\$d/libexec/$p" "\$@"
SH
  chmod +x "$out/bin/$p"
done
cp "$out/bin/graphgate" "$out/src/graphgate" # src/ is as deep as bin/: the same wrapper
for d in migrations schema specs; do cp -r "$top/$d" "$out/$d"; done
cp "$example" "$out/switch_example.yaml"

cat >"$out/run.sh" <<'SH'
#!/usr/bin/env bash
# The bundle's scaling run: scaling.sh with the bundled programs first on PATH.
b=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$b/.." && pwd)
[ -f "$top/bench/gateway/scaling.sh" ] || { echo "run.sh: start it from a checkout holding the bundle folder"; exit 1; }
PATH="$b/bin:$PATH" BENCH_EXAMPLE="$b/switch_example.yaml" BENCH_CORES=${BENCH_CORES:-1 2 4 8} \
  exec bash "$top/bench/gateway/scaling.sh" "$b" "${1:-10}"
SH
chmod +x "$out/run.sh"
"$out/bin/graphgate" version >/dev/null || { echo "bundle: the bundled graphgate does not start"; exit 1; }
echo "bundle: $out ($(du -sh "$out" | cut -f1)); on the other machine: bash ${out#"$top"/}/run.sh [SECONDS]"
