/* app.c — the callback tables of gg_app (see app.h). */
#include "app/app.h"

/* Register a shutdown callback; see app.h. */
bool gg_app_on_shutdown(gg_app *app, gg_app_shutdown_fn fn, void *user) {
    if (!fn || app->nshutdown >= GG_APP_MAX_SHUTDOWN) return false;
    app->shutdown[app->nshutdown].fn = fn;
    app->shutdown[app->nshutdown].user = user;
    app->nshutdown++;
    return true;
}

/* Register a drain callback; see app.h. */
bool gg_app_on_drain(gg_app *app, gg_app_drain_fn fn, void *user) {
    if (!fn || app->ndrain >= GG_APP_MAX_DRAIN) return false;
    app->drain[app->ndrain].fn = fn;
    app->drain[app->ndrain].user = user;
    app->ndrain++;
    return true;
}

/* Register a reload callback; see app.h. */
bool gg_app_on_reload(gg_app *app, gg_app_reload_fn fn, void *user) {
    if (!fn || app->nreload >= GG_APP_MAX_RELOAD) return false;
    app->reload[app->nreload].fn = fn;
    app->reload[app->nreload].user = user;
    app->nreload++;
    return true;
}
