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

/* Register the console's routes on the app's public listener before it starts. */
bool gg_console_install(gg_app *app, struct gg_auth *auth, gg_error *err);

/* The Content-Security-Policy every console response carries (no inline script or style,
 * nothing loaded from elsewhere, no framing). */
#define GG_CONSOLE_CSP                                                                         \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "          \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

#endif
