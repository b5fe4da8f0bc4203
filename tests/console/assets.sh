#!/usr/bin/env bash
# assets.sh — /console serves its three compiled-in files with the right content types, the
# CSP and companion headers on every console answer (404s included), 404 JSON for unknown
# assets, no console on the internal listener, and the document route's key rules (401 with
# no or a wrong key, 403 for another tenant's key or without graphs:write, 200 for an admin
# key of any tenant, 400 for a bad version, 404 for a missing one), and the draft check
# (positioned diagnostics and the document, nothing stored, same key rules).
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"

hdr() { tr -d '\r' <"$1.h" | sed -n "s/^$2: *//Ip" | head -1; }
has() { [ "$(hdr "$1" "$2")" = "$3" ] || { echo "   $2: got '$(hdr "$1" "$2")', want '$3'" >&2; return 1; }; }
csp_ok() { hdr "$1" Content-Security-Policy | grep -q "script-src 'self';" && ! hdr "$1" Content-Security-Policy | grep -q unsafe-inline \
  && has "$1" X-Content-Type-Options nosniff; }
code() { [ "$1" = "$2" ] || { echo "   status $1, want $2" >&2; return 1; }; }
errcode() { [ "$(jget "$1" "d['error']['code']")" = "$2" ] || { echo "   body: $(head -c 200 "$1")" >&2; return 1; }; }

gw_cli tenant create acme >/dev/null 2>&1
gw_cli tenant create other >/dev/null 2>&1
gw_cli graph put acme triage "$GG_SRCDIR/examples/triage.yaml" >/dev/null 2>&1
KEY=$(gw_key acme graphs:write)
OTHER=$(gw_key other graphs:write)
READER=$(gw_key acme tools:read)
ADMIN=$(gw_key other admin)
gg_start || { echo "0 passed, 1 failed"; exit 1; }

st=$(gg_curl "$GG_TMP/i" "$GG_PUB/console")
t "GET /console is 200 HTML" code "$st" 200
t "  as text/html" has "$GG_TMP/i" Content-Type "text/html; charset=utf-8"
t "  with the CSP and nosniff" csp_ok "$GG_TMP/i"
t "  no inline script in the page" bash -c "! grep -qiE '<script>|<script [^>]*>[^<]|on(click|load)=' '$GG_TMP/i'"
t "  loads only its own files" bash -c "grep -q 'src=\"/console/console.js\"' '$GG_TMP/i' && ! grep -qiE 'https?://' '$GG_TMP/i'"
st=$(gg_curl "$GG_TMP/j" "$GG_PUB/console/console.js")
t "GET /console/console.js is 200" code "$st" 200
t "  as text/javascript" has "$GG_TMP/j" Content-Type "text/javascript; charset=utf-8"
t "  byte for byte the source file" cmp -s "$GG_TMP/j" "$GG_SRCDIR/src/console/assets/console.js"
t "  the asset table is generated deterministically" bash -c "cd '$GG_SRCDIR/src/console' && \
  sh gen_assets.sh assets/index.html assets/console.js assets/console.css >'$GG_TMP/g1.c' && \
  sh gen_assets.sh assets/index.html assets/console.js assets/console.css >'$GG_TMP/g2.c' && cmp -s '$GG_TMP/g1.c' '$GG_TMP/g2.c'"
st=$(gg_curl "$GG_TMP/c" "$GG_PUB/console/console.css")
t "GET /console/console.css is text/css" has "$GG_TMP/c" Content-Type "text/css; charset=utf-8"
t "  with the CSP" csp_ok "$GG_TMP/c"
st=$(gg_curl "$GG_TMP/h" -I "$GG_PUB/console/console.css")
t "HEAD /console/console.css is 200" code "$st" 200
st=$(gg_curl "$GG_TMP/n" "$GG_PUB/console/nope.js")
t "an unknown asset is 404" code "$st" 404
t "  with a JSON error" errcode "$GG_TMP/n" not_found
t "  and the CSP" csp_ok "$GG_TMP/n"
st=$(gg_curl "$GG_TMP/n2" "$GG_PUB/console/index.html")
t "index.html only at /console (404 here)" code "$st" 404
st=$(gg_curl "$GG_TMP/n3" "$GG_PUB/console/..%2fadmin")
t "an encoded traversal is 404" code "$st" 404
st=$(gg_curl "$GG_TMP/p" -X POST "$GG_PUB/console")
t "POST /console is 405" code "$st" 405
st=$(gg_curl "$GG_TMP/in" "$GG_INT/console")
t "no console on the internal listener" code "$st" 404

DOC="$GG_PUB/console/api/tenants/acme/graphs/triage/versions"
st=$(gg_curl "$GG_TMP/d0" "$DOC/1/document")
t "document without a key is 401" code "$st" 401
st=$(gg_curl "$GG_TMP/d1" -H "Authorization: Bearer $OTHER" "$DOC/1/document")
t "document with another tenant's key is 403" code "$st" 403
t "  said as forbidden" errcode "$GG_TMP/d1" forbidden
st=$(gg_curl "$GG_TMP/d1r" -H "Authorization: Bearer $READER" "$DOC/1/document")
t "document with a tools:read key is 403" code "$st" 403
t "  said as insufficient_scope" errcode "$GG_TMP/d1r" insufficient_scope
st=$(gg_curl "$GG_TMP/d1x" -H "Authorization: Bearer gg_0123456789abcdef_nope" "$DOC/1/document")
t "document with a wrong key is 401" code "$st" 401
st=$(gg_curl "$GG_TMP/d1a" -H "X-API-Key: $ADMIN" "$DOC/1/document")
t "an admin key (any tenant, X-API-Key) reads it" code "$st" 200
st=$(gg_curl "$GG_TMP/d2" -H "Authorization: Bearer $KEY" "$DOC/1/document")
t "document with the tenant's key is 200" code "$st" 200
t "  the YAML as JSON: switch conditions with rules" \
  test "$(jget "$GG_TMP/d2" "[c['next'] for c in d['document']['tools'][0]['nodes'][1]['conditions']]")" = "['incident', 'priority']"
t "  with the CSP" csp_ok "$GG_TMP/d2"
st=$(gg_curl "$GG_TMP/d3" -H "Authorization: Bearer $KEY" "$DOC/0/document")
t "version 0 is 400" code "$st" 400
st=$(gg_curl "$GG_TMP/d4" -H "Authorization: Bearer $KEY" "$DOC/99999999999/document")
t "an overlong version is 400" code "$st" 400
st=$(gg_curl "$GG_TMP/d5" -H "Authorization: Bearer $KEY" "$DOC/7/document")
t "a missing version is 404" code "$st" 404
t "  with a JSON error" errcode "$GG_TMP/d5" not_found
CHK="$GG_PUB/console/api/tenants/acme/check"
sed 's/next: "incident"/next: "nowhere"/' "$GG_SRCDIR/examples/triage.yaml" >"$GG_TMP/bad.yaml"
st=$(gg_curl "$GG_TMP/k0" -X POST --data-binary @"$GG_TMP/bad.yaml" "$CHK")
t "check without a key is 401" code "$st" 401
st=$(gg_curl "$GG_TMP/k1" -X POST -H "Authorization: Bearer $OTHER" --data-binary @"$GG_TMP/bad.yaml" "$CHK")
t "check with another tenant's key is 403" code "$st" 403
st=$(gg_curl "$GG_TMP/k2" -X POST -H "Authorization: Bearer $KEY" --data-binary @"$GG_TMP/bad.yaml" "$CHK")
t "check of a draft with a bad target is 200" code "$st" 200
t "  not ok, the error on its node with its position" test "$(jget "$GG_TMP/k2" \
  "[d['ok']] + [(x['code'], x['node'], x['line']) for x in d['diagnostics'] if x['severity'] == 'error']")" = "[False, ('missing_target', 'route', 33)]"
t "  with the document to draw" test "$(jget "$GG_TMP/k2" "d['document']['tools'][0]['name']")" = triage
st=$(gg_curl "$GG_TMP/k3" -X POST -H "Authorization: Bearer $KEY" --data-binary 'a: [' "$CHK")
t "a YAML syntax error: positioned, no document" test "$(jget "$GG_TMP/k3" "(d['ok'], d['document'], d['diagnostics'][0]['code'], d['diagnostics'][0]['line'] > 0)")" = "(False, None, 'yaml', True)"
st=$(gg_curl "$GG_TMP/k4" -X POST -H "Authorization: Bearer $KEY" --data-binary @"$GG_SRCDIR/examples/collatz.yaml" "$CHK")
t "a valid draft is ok" test "$(jget "$GG_TMP/k4" "d['ok']")" = True
st=$(gg_curl "$GG_TMP/k5" -X POST -H "Authorization: Bearer $KEY" "$CHK")
t "an empty draft is 400" code "$st" 400
t "nothing was stored by the checks" test "$(gw_cli graph list acme 2>/dev/null | grep -c triage)" = 1
t "server stops cleanly" gw_stop_clean
gg_finish
