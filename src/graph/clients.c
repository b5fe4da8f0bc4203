/* clients.c — who owns a compiled graph's downstream clients.
 *
 * Each mcpServers entry (gserver) of a compiled graph reaches its server through one
 * mcp_client (a stdio child, or an HTTP session and its GET listen stream), created on first
 * use (gg_graph_server_client). The client lives in a shared holder (gclient), so that a
 * graph compiled again from the same source — a proxy graph recompiled after its server's
 * catalog changed — takes over the previous compilation's clients instead of starting new
 * ones (a new initialize, a new GET stream, a new child): gg_graph_adopt_clients.
 *
 * Ownership rule: every gserver holding a client is one of its holder's holders; the client
 * is stopped and freed when the last of them is freed (gg_graph_free_internal).
 * A run in flight on the old compilation holds that graph, hence its gserver, hence the
 * holder: the client it uses outlives it, whichever compilation goes first. Only servers
 * whose definitions are identical share (transport, command, args, env, cwd or URL and
 * protocol, headers and auth, timeout, owner, name, policy, downstream context): the client
 * copied those at creation.
 *
 * Notifications (list_changed) come to the holder and go to the gserver that joined it last
 * (the newest compilation); when that one is freed, the newest one left hears them. */
#include "graph/internal.h"

#include <stdlib.h>
#include <string.h>

struct gclient {
    mcp_client *client;
    pthread_mutex_t mu; /* guards who and n */
    gserver **who;      /* the gservers holding it, oldest first; notifications go to the last */
    size_t n, cap;
};

static void holder_notified(void *user, const char *method, json_t *params) {
    gclient *h = user;
    pthread_mutex_lock(&h->mu); /* held so that the gserver is not freed meanwhile */
    if (h->n && h->who[h->n - 1]->graph) gg_graph_downstream_notified(h->who[h->n - 1], method, params);
    pthread_mutex_unlock(&h->mu);
}

/* s joins h's holders (and hears the server from now on); false on OOM. */
static bool holder_join(gclient *h, gserver *s) {
    pthread_mutex_lock(&h->mu);
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 2;
        gserver **who = realloc(h->who, cap * sizeof *who);
        if (!who) {
            pthread_mutex_unlock(&h->mu);
            return false;
        }
        h->who = who;
        h->cap = cap;
    }
    h->who[h->n++] = s;
    pthread_mutex_unlock(&h->mu);
    return true;
}

/* s leaves h's holders; the last one out stops and frees the client. */
static void holder_leave(gclient *h, gserver *s) {
    pthread_mutex_lock(&h->mu);
    size_t i = 0;
    while (i < h->n && h->who[i] != s) i++;
    if (i < h->n) memmove(&h->who[i], &h->who[i + 1], (h->n - i - 1) * sizeof *h->who);
    if (i < h->n) h->n--; /* the newest one left hears it now */
    bool last = h->n == 0;
    pthread_mutex_unlock(&h->mu);
    if (!last) return;
    mcp_client_free(h->client); /* stops its reader: no notification comes after this */
    pthread_mutex_destroy(&h->mu);
    free(h->who);
    free(h);
}

/* See internal.h. */
mcp_client *gg_graph_client_attach(gserver *s, const mcp_client_policy *policy, gg_error *err) {
    return gg_graph_client_attach_cfg(s, &s->cfg, policy, err);
}

/* See internal.h. */
gclient *gg_graph_client_release(gserver *s) {
    gclient *h = s->shared;
    s->shared = NULL;
    s->client = NULL;
    return h;
}

/* See internal.h. */
void gg_graph_client_leave(gclient *h, gserver *s) {
    if (h) holder_leave(h, s);
}

/* A request the server sends outside any call (the listen stream, a stdio child's): no
 * caller to relay it to, so it gets what a client without the capability answers. */
static void unattributed_request(void *user, const char *method, json_t *params, mcp_client_reply *reply) {
    (void)user, (void)params;
    gg_log(GG_LOG_DEBUG, "a downstream's request outside a call was refused", "method", method, NULL);
    mcp_client_reply_error(reply, MCP_METHOD_NOT_FOUND, "Method not found: no call to relay this request to");
}

/* A server some node relays for (gserver.relays) is told, at initialize, that its client
 * takes elicitation (form and URL), sampling and roots requests: each is relayed to the
 * caller of the call it belongs to (exec.c relay_request), and refused when that caller
 * lacks the capability. Over stdio a request names no call: it is relayed when one relaying
 * call is in flight on the child, else refused (client_stdio.c sole_relaying). */
static void declare_relay(gserver *s, mcp_client *c, const mcp_server_config *cfg) {
    (void)cfg;
    if (!s->relays) return;
    json_t *caps = json_pack("{s:{s:{},s:{}}, s:{}, s:{}}", "elicitation", "form", "url", "sampling", "roots");
    mcp_client_set_request_handler(c, caps, unattributed_request, NULL);
    json_decref(caps);
}

/* See internal.h. */
mcp_client *gg_graph_client_attach_cfg(gserver *s, const mcp_server_config *cfg, const mcp_client_policy *policy,
                                       gg_error *err) {
    gclient *h = calloc(1, sizeof *h);
    if (!h) return gg_error_set(err, "oom", "out of memory"), NULL;
    pthread_mutex_init(&h->mu, NULL);
    if (!holder_join(h, s) || !(h->client = mcp_client_new(cfg, policy, err))) {
        if (!gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
        pthread_mutex_destroy(&h->mu);
        free(h->who);
        free(h);
        return NULL;
    }
    mcp_client_set_notify(h->client, holder_notified, h);
    declare_relay(s, h->client, cfg);
    s->shared = h;
    s->client = h->client;
    return h->client;
}

/* See internal.h. */
void gg_graph_client_detach(gserver *s) {
    gclient *h = s->shared;
    s->shared = NULL;
    s->client = NULL;
    if (h) holder_leave(h, s);
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static bool same_list(const char *const *a, const char *const *b) {
    for (; a && b && *a && *b; a++, b++)
        if (strcmp(*a, *b)) return false;
    return (!a || !*a) && (!b || !*b);
}

/* Whether a client made for a's definition serves b's as well. */
static bool same_server(const gserver *a, const gg_graph *ga, const gserver *b, const gg_graph *gb) {
    const mcp_server_config *x = &a->cfg, *y = &b->cfg;
    /* a server using secrets keeps its own client: it is made from the values at one
     * secrets generation (secrets.c), which another compilation's may not share */
    return ga->policy == gb->policy && !a->target_graph && !b->target_graph && !a->nsecrets && !b->nsecrets &&
           a->relays == b->relays && x->transport == y->transport && x->downstream == y->downstream &&
           x->timeout_ms == y->timeout_ms && same_str(a->name, b->name) && same_str(x->owner, y->owner) &&
           same_str(x->url, y->url) && same_str(x->protocol, y->protocol) && same_str(x->command, y->command) &&
           same_str(x->cwd, y->cwd) &&
           same_list(x->args, y->args) && same_list(x->env, y->env) && same_list(x->headers, y->headers) &&
           (x->auth == y->auth || (x->auth && y->auth && json_equal((json_t *)x->auth, (json_t *)y->auth)));
}

/* s takes from's client, unless it has one already. Both locks are never held at once. */
static bool adopt(gserver *s, gserver *from) {
    pthread_mutex_lock(&s->lock);
    bool took = false;
    if (!s->shared) {
        pthread_mutex_lock(&from->lock); /* s is new: nobody takes s->lock then from->lock */
        gclient *h = from->shared;
        if (h && (took = holder_join(h, s))) {
            s->shared = h;
            s->client = h->client;
        }
        pthread_mutex_unlock(&from->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return took;
}

/* See graph.h. */
size_t gg_graph_adopt_clients(gg_graph *g, gg_graph *old) {
    size_t n = 0;
    if (!g || !old || g == old) return 0;
    for (size_t i = 0; i < g->nservers; i++)
        for (size_t j = 0; j < old->nservers; j++)
            if (same_server(&g->servers[i], g, &old->servers[j], old)) {
                n += adopt(&g->servers[i], &old->servers[j]);
                break;
            }
    return n;
}

/* ---- per-user clients (`auth.per_user`) ----------------------------------------------------
 * A server whose credentials are each caller's own grant cannot share one client: each
 * principal gets its own, whose provider holds that principal's tokens. The table is bounded
 * (GG_GRAPH_USERS_MAX); the least recently used principal leaves it, and its client is
 * retired, not freed — a run may still be calling through it — and freed once the server's
 * call timeout (plus a grace) has passed. These clients are not shared with a recompiled
 * graph and relay no downstream requests: a new compilation makes its own on first use. */

#define USER_RETIRE_GRACE_MS 5000

typedef struct guser {
    char principal[GG_GRAPH_PRINCIPAL_MAX + 1];
    mcp_client *client;
    double used_ms;
    long long gen; /* a server with ${secrets.NAME} (for_caller): made at this generation */
} guser;

typedef struct guser_retired {
    mcp_client *client;
    double free_after_ms;
    struct guser_retired *next;
} guser_retired;

struct gusers {
    guser u[GG_GRAPH_USERS_MAX];
    size_t n;
    guser_retired *retired;
    double idle_ms;  /* an entry unused this long leaves (0: GG_GRAPH_USER_IDLE_MS) */
    double swept_ms; /* when idle entries were last looked for */
};

/* Take the retired clients whose time is up off the list (s->lock held); the caller frees
 * them without the lock. */
static guser_retired *users_due(struct gusers *us, double now) {
    guser_retired *due = NULL;
    for (guser_retired **p = &us->retired; *p;) {
        guser_retired *r = *p;
        if (r->free_after_ms > now) {
            p = &r->next;
            continue;
        }
        *p = r->next;
        r->next = due;
        due = r;
    }
    return due;
}

static void free_retired(guser_retired *r) {
    while (r) {
        guser_retired *next = r->next;
        mcp_client_free(r->client);
        free(r);
        r = next;
    }
}

static bool users_retire(gserver *s, struct gusers *us, size_t lru, double now);

/* The least recently used entry leaves the full table (s->lock held); false on OOM. */
static bool users_evict(gserver *s, struct gusers *us, double now) {
    size_t lru = 0;
    for (size_t i = 1; i < us->n; i++)
        if (us->u[i].used_ms < us->u[lru].used_ms) lru = i;
    return users_retire(s, us, lru, now);
}

/* Entry lru leaves the table, its client retired (s->lock held); false on OOM. */
static bool users_retire(gserver *s, struct gusers *us, size_t lru, double now) {
    guser_retired *r = malloc(sizeof *r);
    if (!r) return false;
    int tmo = s->cfg.timeout_ms > 0 ? s->cfg.timeout_ms : MCP_CLIENT_DEFAULT_TIMEOUT_MS;
    *r = (guser_retired){us->u[lru].client, now + tmo + USER_RETIRE_GRACE_MS, us->retired};
    us->retired = r;
    us->u[lru] = us->u[--us->n];
    return true;
}

/* Entries unused for the idle time leave the table (s->lock held), looked for at most four
 * times per idle time: a principal who stopped calling does not keep a client (a session and
 * a GET stream at the downstream) until GG_GRAPH_USERS_MAX others have come. Only on a
 * lookup: an idle table waits for its server's next call, or for the graph to be freed. */
static void users_sweep_idle(gserver *s, struct gusers *us, double now) {
    double idle = us->idle_ms > 0 ? us->idle_ms : GG_GRAPH_USER_IDLE_MS;
    if (now - us->swept_ms < idle / 4) return;
    us->swept_ms = now;
    for (size_t i = us->n; i-- > 0;) /* users_retire moves the last entry into i: already seen */
        if (now - us->u[i].used_ms > idle) users_retire(s, us, i, now);
}

/* See internal.h. */
void gg_graph_users_set_idle(gserver *s, double idle_ms) {
    pthread_mutex_lock(&s->lock);
    if (!s->users) s->users = calloc(1, sizeof *s->users);
    if (s->users) s->users->idle_ms = idle_ms;
    pthread_mutex_unlock(&s->lock);
}

/* See internal.h. */
size_t gg_graph_users_count(gserver *s, size_t *retired) {
    pthread_mutex_lock(&s->lock);
    size_t n = s->users ? s->users->n : 0, r = 0;
    for (guser_retired *x = s->users ? s->users->retired : NULL; x; x = x->next) r++;
    pthread_mutex_unlock(&s->lock);
    if (retired) *retired = r;
    return n;
}

/* See internal.h. */
mcp_client *gg_graph_user_client(gserver *s, const char *principal, const mcp_client_policy *policy, gg_error *err) {
    if (!principal || !*principal || strlen(principal) > GG_GRAPH_PRINCIPAL_MAX)
        return gg_error_set(err, "principal_required", "server '%s' needs the caller's principal", s->name), NULL;
    double now = gg_now_ms();
    mcp_client *c = NULL;
    pthread_mutex_lock(&s->lock);
    if (!s->users) s->users = calloc(1, sizeof *s->users);
    struct gusers *us = s->users;
    guser_retired *due = us ? users_due(us, now) : NULL;
    if (us) users_sweep_idle(s, us, now);
    /* secrets (for_caller servers only): a client made before a secret changed gives way */
    long long gen = s->nsecrets ? gg_graph_secrets_generation(s) : 0;
    for (size_t i = 0; us && i < us->n && !c; i++)
        if (!strcmp(us->u[i].principal, principal)) {
            if (us->u[i].gen != gen && users_retire(s, us, i, now)) break;
            us->u[i].used_ms = now;
            c = us->u[i].client;
        }
    gg_graph_resolved rv = {.cfg = s->cfg};
    if (!us) gg_error_set(err, "oom", "out of memory");
    else if (!c && (us->n < GG_GRAPH_USERS_MAX || users_evict(s, us, now)) &&
             (!s->nsecrets || gg_graph_secrets_resolve(s, &rv, err))) {
        mcp_server_config cfg = rv.cfg;
        cfg.principal = principal; /* the provider copies it */
        if ((c = mcp_client_new(&cfg, policy, err))) {
            declare_relay(s, c, &cfg); /* the caller's questions are relayed as on the shared client */
            guser *u = &us->u[us->n++];
            gg_strcopy(u->principal, sizeof u->principal, principal);
            u->client = c;
            u->used_ms = now;
            u->gen = rv.gen;
        }
        if (s->nsecrets) gg_graph_secrets_resolved_free(&rv);
    } else if (!c && !gg_error_is_set(err)) gg_error_set(err, "oom", "out of memory");
    pthread_mutex_unlock(&s->lock);
    free_retired(due);
    return c;
}

/* See internal.h. */
mcp_client *gg_graph_caller_client(gserver *s, const mcp_call_ctx *ctx, bool *held, gg_error *err) {
    *held = false;
    const mcp_caller *who = ctx ? ctx->identity.who : NULL;
    /* for the caller (token_exchange, id_jag subject: caller): the caller's own token is the
     * exchange's subject; without it (an API key, a task, a graph calling a graph) nobody's
     * token can be had */
    const char *subject = s->for_caller && ctx ? ctx->identity.subject_token : NULL;
    if (!who || !who->issuer || !who->subject || !who->key_id || (s->for_caller && !subject)) {
        if (s->for_caller)
            gg_error_set(err, "principal_required",
                         "server '%s' is called on behalf of the caller (auth.type %s): call with an OAuth "
                         "access token of a user, not an API key",
                         s->name, json_string_value(json_object_get(s->auth, "type")));
        else
            gg_error_set(err, "principal_required",
                         "server '%s' acts for each user with their own consent (auth.per_user): call with an OAuth access "
                         "token of a user, not an API key",
                         s->name);
        return NULL;
    }
    mcp_client *c = gg_graph_user_client(s, who->key_id, s->graph->policy, err);
    if (c && subject) { /* held for this call only */
        mcp_client_auth_subject(c, subject);
        *held = true;
    }
    return c;
}

/* See internal.h. Under s->lock, so the client found is not freed meanwhile (a retired one
 * is freed only after leaving the list under that lock). */
void gg_graph_user_release(gserver *s, mcp_client *c) {
    pthread_mutex_lock(&s->lock);
    struct gusers *us = s->users;
    bool found = false;
    for (size_t i = 0; us && i < us->n && !found; i++) found = us->u[i].client == c;
    for (guser_retired *r = us ? us->retired : NULL; r && !found; r = r->next) found = r->client == c;
    if (found) mcp_client_auth_subject(c, NULL);
    pthread_mutex_unlock(&s->lock);
}

/* See internal.h. */
void gg_graph_users_free(gserver *s) {
    struct gusers *us = s->users;
    s->users = NULL;
    if (!us) return;
    for (size_t i = 0; i < us->n; i++) mcp_client_free(us->u[i].client);
    free_retired(us->retired);
    free(us);
}
