/* console.h — the web console served by the gateway at /console on the public listener:
 * one HTML, one JS and one CSS file compiled into the binary (src/console/assets/, turned
 * into a C table at build time by gen_assets.sh), sent with a strict Content-Security-Policy,
 * plus two JSON routes the console draws graphs from: a stored version's source as JSON
 * (GET /console/api/tenants/{t}/graphs/{g}/versions/{v}/document) and a draft validated
 * without storing it (POST /console/api/tenants/{t}/check). Every other piece of data
 * the console shows comes from the admin REST API with the signed-in key's own scopes.
 *
 * Ownership: the console's route context belongs to the gg_app it was installed into and is
 * freed by the shutdown callback it registers; it borrows the app's store and the auth
 * passed in (which must outlive the HTTP listeners). The asset bytes are static.
 */
#ifndef GG_CONSOLE_H
#define GG_CONSOLE_H

#include <stdbool.h>

#include "app/app.h"
#include "util/util.h"

struct gg_auth;
struct gg_http_req;
struct gg_http_res;

/* What the console needs from the layer that knows tenants' authorization servers (the
 * gateway; cli wires it, since the console may not include it). Both may be NULL: then the
 * console's routes take API keys only and its page connects to itself only. */
typedef struct gg_console_hooks {
    /* an API key or the tenant's console token on tenant's routes, needing scope `need`
     * (a gg_scope); on false res holds the answer (401 with a challenge, 403, 429, 503) */
    bool (*authorize)(void *user, struct gg_http_req *req, struct gg_http_res *res, const char *tenant,
                      unsigned need);
    /* the origins the sign-in page of tenant may connect to (its authorization servers',
     * "scheme://host[:port]" space-separated) into buf; "" for none */
    void (*connect_origins)(void *user, const char *tenant, char *buf, size_t n);
    void *user;
} gg_console_hooks;

/* Register the console's routes on the app's public listener before it starts; hooks is
 * copied (may be NULL). */
bool gg_console_install(gg_app *app, struct gg_auth *auth, const gg_console_hooks *hooks, gg_error *err);

/* The Content-Security-Policy every console response carries (no inline script or style,
 * nothing loaded from elsewhere, no framing). */
#define GG_CONSOLE_CSP                                                                         \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

#endif
