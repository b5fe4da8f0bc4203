/* credentials.h — what the gateway holds for tenants to reach other servers: tenant
 * secrets and the master key (secrets.c), per-user consent for downstream servers
 * (consent.c), and the OAuth providers of downstream servers' `auth:` settings
 * (downstream_auth.c). No function here logs or returns a secret, token or code. Not for
 * use outside src/gateway.
 *
 * Ownership: the gateway holds each (gg_gateway's secrets, consent, dsauth): started by
 * gateway.c in this order — dsauth, secrets, consent (its state key derives from the master
 * key) — and freed at its stop; gw_consent_free waits for its helpers; a gw_dsauth's memory
 * goes with the last provider. gw_secrets_seam and gw_secrets_vault are borrowed from the
 * gateway; gw_dsauth_tenant, gw_dsauth_for_callers and gw_consent_elicitation return new
 * references.
 *
 * Threads: secrets.c's state is read through an atomic by the graphs on any worker and
 * written by the watcher (gw_secrets_check); consent runs its network steps on its own
 * helper threads with the request deferred; downstream_auth.c's providers are made and
 * freed on any thread, its list guarded by its mutex (taken before a client's own).
 */
#ifndef GG_GATEWAY_CREDENTIALS_H
#define GG_GATEWAY_CREDENTIALS_H

#include <stdbool.h>

#include "auth/auth.h"
#include "gateway/gateway.h"
#include "graph/graph.h"
#include "mcp/mcp.h"
#include "store/store.h"

/* secrets.c: tenant secrets. start: the master key from the configuration (refusing to
 * start with secrets stored and no key, or another key), the admin routes; check: the
 * watcher's pass (generation, batched last_used); seam: what gw_build_graph hands the
 * graphs (NULL before start). */
bool gw_secrets_start(gg_gateway *gw, gg_error *err);
void gw_secrets_check(gg_gateway *gw);
const gg_graph_secrets *gw_secrets_seam(gg_gateway *gw);
void gw_secrets_free(gg_gateway *gw);
/* The master key (per-user grants are sealed with it too), or NULL when none is configured. */
const gg_store_vault *gw_secrets_vault(gg_gateway *gw);
/* consent.c: per-user consent for downstream servers (`auth.per_user`, docs/oauth.md): the
 * graphs' consent hook (gg_graph_consent_fn: the -32042 elicitation naming the connect
 * page), and the public routes GET /oauth/connect and GET /oauth/callback. start: after
 * gw_secrets_start (the state key derives from the master key); free waits for its helpers. */
bool gw_consent_start(gg_gateway *gw, gg_error *err);
void gw_consent_free(gg_gateway *gw);
json_t *gw_consent_elicitation(void *gw, const char *tenant, const char *server, const char *url, const json_t *auth,
                               const mcp_caller *who);

/* The providers of downstream servers' `auth:` credentials (downstream_auth.c): installed as
 * the MCP client's factory, kept per tenant for the admin view and /metrics. */
struct gw_dsauth *gw_dsauth_install(gg_gateway *gw);
/* The egress checks of an OAuth client's own requests under a tenant's policy. */
gg_oauth_client_net gw_dsauth_net(const mcp_client_policy *policy);
void gw_dsauth_free(struct gw_dsauth *reg); /* the memory goes with the last provider */
json_t *gw_dsauth_tenant(struct gw_dsauth *reg, const char *tenant); /* [{server, url, state, …}] */
/* servers acting for each caller (mcp_auth_for_caller), one row each: [{server, url, callers
 * (principals with a client on this replica), valid (of those, holding a token), requests,
 * failures, last_failure?, last_failure_ms?}] — never a principal, never a token */
json_t *gw_dsauth_for_callers(struct gw_dsauth *reg, const char *tenant);
void gw_dsauth_metrics(struct gw_dsauth *reg, gg_strbuf *out);

#endif
