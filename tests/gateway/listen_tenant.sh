#!/usr/bin/env bash
# listen_tenant.sh — one tenant cannot take every listen stream (tenants.max_listen_streams):
# with a bound of 2, tenant hog installs three proxy graphs of a streamable-HTTP SDK server
# (listen_srv.mjs); two of them get their GET stream, the third is put off (counted in
# /metrics as owner_full) — and tenant fair's graph of the same server still gets its own
# stream and hears the downstream's list_changed at once: a tool added to the downstream
# shows in fair's proxy graph's tools/list with no upload and no sync. When hog deletes a
# graph, its put-off graph takes the freed slot. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

. "$GG_SRCDIR/tests/gateway/lib_listen.sh"
trap 'listen_stop_all; gg_cleanup' EXIT
A=$(listen_srv sdk)
[ -n "$A" ] || { echo "the downstream did not start: $(head -5 "$GG_TMP/srv_sdk.log")"; echo "0 passed, 1 failed"; exit 1; }
proxy_yaml "$GG_TMP/px.yaml" "$A"

gw_cli_run tenant create hog >/dev/null
gw_cli_run tenant create fair >/dev/null
HOG=$(gw_key hog admin)
FAIR=$(gw_key fair admin)
FKEY=$(gw_key fair tools:read,tools:execute)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_TENANTS_MAX_LISTEN_STREAMS=2 gg_start ||
  { echo "0 passed, 1 failed"; exit 1; }
t "setup: two tenants and their keys" gw_cli_clean

# the downstream's status, for the attack's checks
st() { status "$A" "$1"; }
# one at a time, so that p3 is the one put off
n=0
for g in p1 p2 p3; do
  t "hog's proxy graph $g is accepted" eq "$(gw_put_graph "$HOG" hog $g "$GG_TMP/px.yaml")" 201
  n=$((n + 1))
  t "... its downstream session is up" wait_for st "d['sessions'] == $n"
done
t "hog holds 2 listen streams (its bound), not 3" wait_for st 'd["streams"] == 2 and d["sessions"] == 3'
t "... the third was put off: /metrics owner_full counted" \
  wait_for eval 'metric_at_least "$(metric "graphgate_downstream_listen_total{event=\"owner_full\"}")"'
t "fair's proxy graph of the same server is accepted" eq "$(gw_put_graph "$FAIR" fair fx "$GG_TMP/px.yaml")" 201
t "... and fair gets its own stream beside hog's two" wait_for st 'd["streams"] == 3 and d["sessions"] == 4'
gets=$(st 'd["gets"]')
t "hog deletes p1" eq "$(gg_curl "$GG_TMP/del.json" -X DELETE -H "Authorization: Bearer $HOG" "$GG_PUB/admin/tenants/hog/graphs/p1")" 200
freed() {
  wait_for st "d['streams'] == 3 and d['gets'] > $gets" && return 0
  echo "   downstream status: $(curl -sS "http://127.0.0.1:$A/status"), GETs before: $gets" >&2
  return 1
}
t "... its put-off graph takes the freed slot: a new GET, 3 streams again (hog 2, fair 1)" freed
sid=$(gw_init "$GG_PUB/mcp/fair/fx" "$FKEY")
tl() { proxy_lists "$GG_PUB/mcp/fair/fx" "$FKEY" "$sid" l_zeta; }
curl -sS -X POST "http://127.0.0.1:$A/add?name=zeta" >/dev/null
t "a tool added to the downstream is heard by fair at once: l_zeta in fair's tools/list" wait_for tl
t "server stops cleanly" gw_stop_clean
gg_finish
