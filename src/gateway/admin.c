/* admin.c — the admin REST API on the public listener: tenants, keys, graphs (validate,
 * store a new immutable version, activate atomically, roll back, delete), executions and
 * the audit log. Every change is written to the audit log. Tenants and keys need the
 * `admin` scope; graph and execution routes accept `graphs:write` for the key's own tenant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/authz.h"
#include "gateway/calls.h"
#include "gateway/catalogs.h"
#include "gateway/internal.h"
#include "gateway/relay.h"
#include "jsonata/jsonata.h"

/* ------------------------------------------------------------------ helpers */

/* Authenticate and authorize: tenant NULL means the route needs `admin`. A tenant's routes
 * also take a token for the tenant's console resource (docs/oauth.md); the global ones take
 * API keys only. */
static bool admin_auth(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need,
                       gg_principal *pr) {
    if (!gw_origin_host_ok(gw, req, res)) return false;
    if (!tenant) {
        if (!gw_authenticate(gw, req, res, pr)) return false;
        if (pr->scopes & GG_SCOPE_ADMIN) return true;
        gw_insufficient_scope(res, GG_SCOPE_ADMIN);
        return false;
    }
    if (!gw_authenticate_tenant(gw, req, res, tenant, pr)) return false;
    unsigned missing = 0;
    if (gg_auth_allows(pr, tenant, need, &missing)) return true;
    if (missing == 0) gw_wrong_tenant(res);
    else if (pr->oauth) gw_insufficient_scope_tenant(gw, res, tenant, pr, need);
    else gw_insufficient_scope(res, need);
    return false;
}

bool gw_admin_allow(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need) {
    gg_principal pr;
    return admin_auth(gw, req, res, tenant, need, &pr);
}

bool gw_admin_allow_as(gg_gateway *gw, gg_http_req *req, gg_http_res *res, const char *tenant, gg_scope need,
                       gg_principal *pr) {
    return admin_auth(gw, req, res, tenant, need, pr);
}

static int store_error(gg_http_res *res, gg_error *err) {
    gg_http_res_error_from(res, 0, err); /* the status comes from the code (src/util/errcode.c) */
    gg_error_clear(err);
    return GG_HTTP_DONE;
}

static void audit(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *action,
                  const char *target, json_t *details /* stolen */) {
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_audit_append(gw->store, pr->key_id, tenant, action, target, details, &err)) {
        gg_log(GG_LOG_ERROR, "audit append failed", "action", action, "error", err.message ? err.message : err.code, NULL);
        gg_error_clear(&err);
    }
    json_decref(details);
}

void gw_admin_audit(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *action, const char *target,
                    json_t *details) {
    audit(gw, pr, tenant, action, target, details);
}

static bool valid_name(gg_http_res *res, const char *name, const char *what) {
    gg_error err = GG_ERROR_INIT;
    if (gg_auth_valid_name(name, what, &err)) return true;
    gg_http_res_fail(res, "invalid_name", "%s", err.message ? err.message : "invalid name");
    gg_error_clear(&err);
    return false;
}

static bool tenant_exists(gg_gateway *gw, gg_http_res *res, const char *t) {
    gg_error err = GG_ERROR_INIT;
    if (gg_store_tenant_exists(gw->store, t, &err)) return true;
    if (gg_error_is_set(&err)) store_error(res, &err);
    else gg_http_res_fail(res, "not_found", "no tenant %s", t);
    return false;
}

bool gw_admin_tenant_exists(gg_gateway *gw, gg_http_res *res, const char *tenant) { return tenant_exists(gw, res, tenant); }

static int reply(gg_http_res *res, int status, json_t *body) {
    if (!body) return gg_http_res_fail(res, "internal_error", "out of memory"), GG_HTTP_DONE;
    gg_http_res_json(res, status, body);
    return GG_HTTP_DONE;
}

/* reply for execution history: numbers as JSON.stringify prints them (jsonata_dump, as the
 * CLI prints them too), so a duration of 48.6 ms reads 48.6, not jansson's
 * 48.600000000000001. */
static int reply_history(gg_http_res *res, json_t *body) {
    char *text = body ? jsonata_dump(body, 0) : NULL;
    json_decref(body);
    if (!text) return gg_http_res_fail(res, "internal_error", "out of memory"), GG_HTTP_DONE;
    gg_http_res_bytes_take(res, 200, "application/json", text, strlen(text));
    return GG_HTTP_DONE;
}

/* ------------------------------------------------------------------ tenants */

static int put_tenant(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr) || !valid_name(res, t, "tenant")) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    bool created = gg_store_tenant_create(gw->store, t, &err);
    if (!created && strcmp(err.code, "conflict") != 0) return store_error(res, &err);
    gg_error_clear(&err);
    if (created) audit(gw, &pr, t, "tenant.create", t, NULL);
    return reply(res, created ? 201 : 200, json_pack("{s:s,s:b}", "name", t, "created", created));
}

static int list_tenants(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_tenants_list(gw->store, &err);
    if (!l) return store_error(res, &err);
    return reply(res, 200, json_pack("{s:o}", "tenants", l));
}

static int delete_tenant(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_tenant_delete(gw->store, t, &err)) return store_error(res, &err);
    gw_registry_remove_tenant(gw->registry, t);
    gg_auth_invalidate_all(gw->auth);
    audit(gw, &pr, t, "tenant.delete", t, NULL);
    return reply(res, 200, json_pack("{s:s,s:b}", "name", t, "deleted", 1));
}

/* ------------------------------------------------------------------ keys */

/* Canonical scopes text (gg_scopes_format) as the array of names that GET
 * /admin/tenants/{t}/keys lists for the same key. */
static json_t *scopes_json(const char *csv) {
    json_t *a = json_array();
    for (const char *p = csv; a && *p;) {
        size_t n = strcspn(p, ",");
        if (n) json_array_append_new(a, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    return a;
}

static int create_key(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *body = gg_http_body_object(req, "a JSON object like {\"scopes\": [\"tools:read\"], \"name\": \"ci\"}", &err);
    if (!body) return store_error(res, &err);
    json_t *sc = json_object_get(body, "scopes");
    const char *name = json_string_value(json_object_get(body, "name"));
    gg_strbuf csv = GG_STRBUF_INIT;
    if (json_is_string(sc)) gg_strbuf_puts(&csv, json_string_value(sc));
    else if (json_is_array(sc)) {
        size_t i;
        json_t *e;
        json_array_foreach(sc, i, e) {
            if (!json_is_string(e)) {
                gg_strbuf_free(&csv);
                json_decref(body);
                return gg_http_res_fail(res, "invalid_scope", "scopes must be strings"), GG_HTTP_DONE;
            }
            if (i) gg_strbuf_putc(&csv, ',');
            gg_strbuf_puts(&csv, json_string_value(e));
        }
    }
    unsigned scopes = csv.data ? gg_scopes_parse(csv.data, &err) : 0;
    gg_strbuf_free(&csv);
    if (!scopes) {
        json_decref(body);
        if (!gg_error_is_set(&err)) gg_error_set(&err, "invalid_scope", "scopes: a non-empty list of scopes is required");
        return gg_http_res_fail(res, "invalid_scope", "%s", err.message), gg_error_clear(&err), GG_HTTP_DONE;
    }
    char *key = NULL, id[GG_KEY_ID_LEN + 1];
    if (!gg_auth_create_key(gw->auth, t, scopes, name ? name : "", &key, id, &err)) {
        json_decref(body);
        return store_error(res, &err);
    }
    char sbuf[160];
    gg_scopes_format(scopes, sbuf, sizeof sbuf);
    audit(gw, &pr, t, "key.create", id, json_pack("{s:s,s:s}", "scopes", sbuf, "name", name ? name : ""));
    json_t *out = json_pack("{s:s,s:s,s:s,s:o,s:s}", "id", id, "key", key, "tenant", t, "scopes", scopes_json(sbuf),
                            "name", name ? name : "");
    gg_auth_free_secret(key);
    json_decref(body);
    return reply(res, 201, out);
}

static int list_keys(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr) || !tenant_exists(gw, res, t)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_keys_list(gw->store, t, &err);
    if (!l) return store_error(res, &err);
    return reply(res, 200, json_pack("{s:o}", "keys", l));
}

static int delete_key(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *id = gg_http_param(req, "id");
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_auth_revoke_key(gw->auth, id, NULL, &err)) return store_error(res, &err);
    audit(gw, &pr, NULL, "key.revoke", id, NULL);
    return reply(res, 200, json_pack("{s:s,s:b}", "id", id, "revoked", 1));
}

/* ------------------------------------------------------------------ graphs */

static json_t *tool_names(mcp_server *s) {
    mcp_provider *p = mcp_server_provider(s);
    json_t *tools = p->ops->list_tools ? p->ops->list_tools(p) : NULL, *names = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) json_array_append(names, json_object_get(t, "name"));
    json_decref(tools);
    return names;
}

/* The JSON error model {"error":{code,message,...}} of err (cleared) as a body; *status from
 * its code (src/util/errcode.c), as gg_http_res_error_from answers. */
static json_t *error_body(gg_error *err, int *status) {
    *status = gg_error_http_status(err);
    json_t *o = json_pack("{s:s,s:s}", "code", err->code[0] ? err->code : "internal_error", "message",
                          err->message ? err->message : (err->code[0] ? err->code : "internal_error"));
    if (o && err->line > 0) {
        json_object_set_new(o, "line", json_integer(err->line));
        json_object_set_new(o, "column", json_integer(err->column));
    }
    if (o && err->position >= 0) json_object_set_new(o, "position", json_integer(err->position));
    if (o && err->path) json_object_set_new(o, "path", json_string(err->path));
    gg_error_clear(err);
    return o ? json_pack("{s:o}", "error", o) : NULL;
}

/* 422 with every error and warning of a graph that did not validate. */
static json_t *validation_failed(gg_graph_diags *d, const gg_error *err) {
    json_t *errors = json_array(), *warnings = json_array();
    bool timed_out = false;
    for (size_t i = 0; i < d->count; i++) {
        json_array_append_new(d->items[i].severity == GG_DIAG_ERROR ? errors : warnings, gg_graph_diag_json(&d->items[i]));
        if (!strcmp(d->items[i].code, "timeout")) timed_out = true;
    }
    if (json_array_size(errors) == 0 && err && err->message)
        json_array_append_new(errors, json_pack("{s:s,s:s}", "severity", "error", "message", err->message));
    char msg[128];
    if (timed_out) snprintf(msg, sizeof msg, "validating the graph took longer than the server allows");
    else snprintf(msg, sizeof msg, "the graph has %zu error(s)", json_array_size(errors));
    return json_pack("{s:{s:s,s:s},s:o,s:o}", "error", "code", timed_out ? "validation_timeout" : "validation",
                     "message", msg, "errors", errors, "warnings", warnings);
}

static const char *body_format(gg_http_req *req) {
    const char *ct = gg_http_header(req, "Content-Type");
    return ct && strstr(ct, "json") ? "json" : "yaml";
}

/* Loader options from the configuration; see internal.h. */
gg_graph_options gw_graph_options(const gg_gateway *gw, bool upload, double deadline_ms) {
    const gg_config *cfg = gw->cfg;
    gg_graph_options o = {0};
    o.max_source_bytes = upload ? cfg->graphs_max_bytes : 0;
    o.cap_node_executions = cfg->graphs_cap_node_executions;
    o.cap_execution_ms = (long)cfg->graphs_cap_execution_ms;
    o.cap_eval_memory = (long)cfg->limits_eval_memory_bytes;
    o.cap_run_memory = (long)cfg->limits_run_memory_bytes;
    o.clamp_limits = !upload;
    o.check_secrets = upload; /* a stored version naming a since-deleted secret still loads */
    o.deadline_ms = deadline_ms;
    o.clients = gw->downstream;
    return o;
}

/* An upload (version 0) or a rollback, validated on an upload thread (uploads.c). The
 * request's params and body stay valid until the deferred response is completed. */
typedef struct graph_job {
    gg_gateway *gw;
    gg_http_async *a;
    gg_principal pr;
    const char *tenant, *graph, *format;
    const char *src;
    size_t len;
    int version;            /* rollback: the stored version to activate; upload: 0 */
    gg_graph_source stored; /* rollback: that version's source (owned) */
    double deadline_ms;     /* gg_now_ms() terms; from acceptance, queue time included */
    gw_publish_done done;   /* not over HTTP (a is NULL): the answer goes here */
    void *done_user;
    char own_tenant[GG_TENANT_MAX]; /* gw_publish_graph's tenant (tenant points here) */
} graph_job;


/* Validate and compile, store (upload) or activate (rollback), install: the answer's body
 * (new reference; NULL = out of memory) and *status. */
static json_t *graph_job_apply(graph_job *j, int *status) {
    gg_gateway *gw = j->gw;
    gg_graph_diags d = GG_GRAPH_DIAGS_INIT;
    gg_error err = GG_ERROR_INIT;
    gg_graph_options o = gw_graph_options(gw, true, j->deadline_ms);
    gw_catalog_sink sink;
    o.downstream = gw_catalog_sink_init(&sink, gw, j->tenant);
    gw_pins_ctx pins = {gw, j->tenant, j->graph, j->version};
    if (j->version) { /* a rollback serves what that version pinned */
        o.pinned = gw_stored_pins;
        o.pinned_user = &pins;
    }
    mcp_server *s = gw_build_graph(gw, j->tenant, j->graph, j->src, j->len, &o, &d, &err);
    gw_catalog_sink_done(&sink, j->graph); /* other proxy graphs see what the listing changed */
    json_t *out = NULL;
    if (!s) {
        if (strcmp(err.code, "validation") == 0) {
            *status = 422;
            out = validation_failed(&d, &err);
        }
        else out = error_body(&err, status);
        gg_error_clear(&err);
        gg_graph_diags_free(&d);
        return out;
    }
    /* a graph that would reach itself through the graphs it calls never runs to the end */
    if (!gw_graph_calls_acyclic(gw, j->tenant, j->graph, gg_graph_provider_graph(mcp_server_provider(s)), &err)) {
        mcp_server_unref(s);
        gg_graph_diags_free(&d);
        out = error_body(&err, status);
        *status = 422;
        return out;
    }
    int version = j->version;
    bool ok;
    if (version) ok = gg_store_graph_activate(gw->store, j->tenant, j->graph, version, &err);
    else {
        gg_graph_quota q = {gw->cfg->graphs_max_per_tenant, (long long)gw->cfg->graphs_max_tenant_bytes,
                            gw->cfg->graphs_max_versions};
        ok = gg_store_graph_put_quota(gw->store, j->tenant, j->graph, j->src, j->len, j->format, j->pr.key_id, &q,
                                      &version, &err);
    }
    if (!ok) {
        mcp_server_unref(s);
        gg_graph_diags_free(&d);
        return error_body(&err, status);
    }
    if (!j->version) gw_pins_store(gw, j->tenant, j->graph, version, s); /* before it is served */
    gw_registry_put(gw->registry, j->tenant, j->graph, version, s);
    gw_downstream_listen(s);
    json_t *warnings = json_array();
    for (size_t i = 0; i < d.count; i++) json_array_append_new(warnings, gg_graph_diag_json(&d.items[i]));
    gg_graph_diags_free(&d);
    if (j->version) audit(gw, &j->pr, j->tenant, "graph.activate", j->graph, json_pack("{s:i}", "version", version));
    else
        audit(gw, &j->pr, j->tenant, "graph.put", j->graph,
              json_pack("{s:i,s:I}", "version", version, "bytes", (json_int_t)j->len));
    out = json_pack("{s:s,s:s,s:i,s:b,s:o,s:o}", "tenant", j->tenant, "graph", j->graph, "version", version,
                    "active", 1, "tools", tool_names(s), "warnings", warnings);
    mcp_server_unref(s);
    *status = j->version ? 200 : 201;
    return out;
}

/* The answer: over HTTP, or to the publisher's callback (body stolen). */
static void graph_job_answer(graph_job *j, int status, json_t *body) {
    if (j->done) j->done(j->done_user, status, body);
    else reply(gg_http_async_res(j->a), status, body);
}

static json_t *error_of(const char *code, const char *message, int status, int *out) {
    *out = status;
    return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message);
}

static void graph_job_finish(graph_job *j) {
    if (j->a) gg_http_async_complete(j->a);
    gg_store_graph_source_clear(&j->stored);
    free(j);
}

static void graph_job_run(void *arg) {
    graph_job *j = arg;
    int status = 500;
    json_t *body;
    if (j->a && gg_http_async_abandoned(j->a)) {
        /* the server answered already (shutdown) */
    } else if (gg_now_ms() > j->deadline_ms) {
        if (j->a) gg_http_res_header(gg_http_async_res(j->a), "Retry-After", "5");
        body = error_of("busy", "the upload waited longer than its time limit for a validation thread; retry", 503, &status);
        graph_job_answer(j, status, body);
    } else {
        body = graph_job_apply(j, &status);
        graph_job_answer(j, status, body);
    }
    graph_job_finish(j);
}

static void graph_job_refuse(void *arg) {
    graph_job *j = arg;
    int status;
    json_t *body = error_of("shutting_down", "the server is shutting down", 503, &status);
    graph_job_answer(j, status, body);
    graph_job_finish(j);
}

/* Hand the job to the upload threads (false + err when they refuse it: busy, rate_limited,
 * shutting_down). */
static bool graph_job_queue(gg_gateway *gw, graph_job *j, gg_error *err) {
    j->gw = gw;
    j->deadline_ms = gg_now_ms() + (double)gw->cfg->graphs_upload_timeout_ms;
    return gw_uploads_submit(gw->uploads, j->tenant, (gw_job){graph_job_run, graph_job_refuse, j}, err);
}

/* Hand the job to the upload threads and defer the response; on refusal answer now. */
static int graph_job_submit(gg_gateway *gw, gg_http_req *req, gg_http_res *res, graph_job *j) {
    if (!(j->a = gg_http_defer(req))) {
        gg_store_graph_source_clear(&j->stored);
        free(j);
        return gg_http_res_fail(res, "unavailable", "out of memory"), GG_HTTP_DONE;
    }
    gg_error err = GG_ERROR_INIT;
    if (graph_job_queue(gw, j, &err)) return GG_HTTP_DEFERRED;
    gg_http_res *ares = gg_http_async_res(j->a);
    gg_http_res_header(ares, "Retry-After", "1");
    gg_http_res_error_from(ares, strcmp(err.code, "rate_limited") == 0 ? 429 : 503, &err);
    gg_error_clear(&err);
    graph_job_finish(j);
    return GG_HTTP_DEFERRED;
}

/* See internal.h: the REST upload's checks and path, answered to a callback. */
void gw_publish_graph(gg_gateway *gw, const gg_principal *pr, const char *tenant, const char *graph, const char *src,
                      size_t len, gw_publish_done done, void *user) {
    int status = 0;
    json_t *body = NULL;
    gg_error err = GG_ERROR_INIT;
    char fmt = 0;
    for (size_t i = 0; i < len && !fmt; i++)
        if (src[i] != ' ' && src[i] != '\t' && src[i] != '\r' && src[i] != '\n') fmt = src[i];
    unsigned missing = 0;
    if (!gg_auth_allows(pr, tenant, GG_SCOPE_GRAPHS_WRITE, &missing))
        body = missing ? error_of("insufficient_scope", "Required scope: graphs:write", 403, &status)
                       : error_of("forbidden", "this API key belongs to another tenant", 403, &status);
    else if (!gg_auth_valid_name(graph, "graph", &err)) {
        body = error_body(&err, &status);
        status = 400;
    } else if (!len) body = error_of("bad_request", "the graph source is empty", 400, &status);
    else if (gw->cfg->graphs_max_bytes && len > gw->cfg->graphs_max_bytes)
        body = error_of("too_large", "the graph is larger than graphs.max_bytes", 413, &status);
    else if (!gg_store_tenant_exists(gw->store, tenant, &err))
        body = gg_error_is_set(&err) ? error_body(&err, &status) : error_of("not_found", "no such tenant", 404, &status);
    if (status) {
        done(user, status, body);
        return;
    }
    graph_job *j = calloc(1, sizeof *j);
    if (!j) {
        done(user, 503, error_of("unavailable", "out of memory", 503, &status));
        return;
    }
    *j = (graph_job){.pr = *pr, .graph = graph, .format = fmt == '{' ? "json" : "yaml", .src = src, .len = len,
                     .done = done, .done_user = user};
    snprintf(j->own_tenant, sizeof j->own_tenant, "%s", tenant);
    j->tenant = j->own_tenant;
    if (graph_job_queue(gw, j, &err)) return;
    body = error_body(&err, &status);
    free(j);
    done(user, status == 429 ? 429 : 503, body);
}

static int put_graph(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr) || !valid_name(res, g, "graph") ||
        !tenant_exists(gw, res, t))
        return GG_HTTP_DONE;
    size_t len = 0;
    const char *src = gg_http_body(req, &len);
    if (!len) return gg_http_res_fail(res, "bad_request", "the body must hold the graph (YAML or JSON)"), GG_HTTP_DONE;
    if (gw->cfg->graphs_max_bytes && len > gw->cfg->graphs_max_bytes)
        return gg_http_res_fail(res, "too_large", "the graph is %zu bytes; a graph may have at most %zu", len,
                                 gw->cfg->graphs_max_bytes),
               GG_HTTP_DONE;
    graph_job *j = calloc(1, sizeof *j);
    if (!j) return gg_http_res_fail(res, "unavailable", "out of memory"), GG_HTTP_DONE;
    *j = (graph_job){.pr = pr, .tenant = t, .graph = g, .format = body_format(req), .src = src, .len = len};
    return graph_job_submit(gw, req, res, j);
}

static int list_graphs(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr) || !tenant_exists(gw, res, t)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_graphs_list(gw->store, t, &err);
    if (!l) return store_error(res, &err);
    return reply(res, 200, json_pack("{s:o}", "graphs", l));
}

static json_t *source_json(const gg_graph_source *s) {
    char ts[GG_TIME_ISO_MAX];
    gg_time_iso8601(s->created_ms, ts);
    return json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:s%}", "tenant", s->tenant, "graph", s->name, "version", s->version,
                     "format", s->format ? s->format : "yaml", "content_hash", s->content_hash, "created_at", ts,
                     "source", s->source, s->source_len);
}

static int get_graph(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_graph_source s = {0};
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_graph_get_active(gw->store, t, g, &s, &err)) return store_error(res, &err);
    json_t *out = source_json(&s);
    int v = 0;
    mcp_server *srv = gw_registry_get(gw->registry, t, g, &v, NULL); /* compiled now if not cached */
    if (out && srv) {
        mcp_provider *p = mcp_server_provider(srv);
        json_object_set_new(out, "tools", p->ops->list_tools ? p->ops->list_tools(p) : json_array());
        json_object_set_new(out, "loaded_version", json_integer(v));
    }
    mcp_server_unref(srv);
    gg_store_graph_source_clear(&s);
    return reply(res, 200, out);
}

static int graph_versions(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_graph_versions(gw->store, t, g, &err);
    if (!l) return store_error(res, &err);
    return reply(res, 200, json_pack("{s:s,s:s,s:o}", "tenant", t, "graph", g, "versions", l));
}

static int activate_graph(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    json_t *body = gg_http_body_object(req, "a JSON object like {\"version\": N}", &err);
    if (!body) return store_error(res, &err);
    json_t *jv = json_object_get(body, "version");
    int version = json_is_integer(jv) ? (int)json_integer_value(jv) : 0;
    json_decref(body);
    if (version <= 0) return gg_http_res_fail(res, "bad_request", "body must be {\"version\": N} with N >= 1"), GG_HTTP_DONE;
    graph_job *j = calloc(1, sizeof *j);
    if (!j) return gg_http_res_fail(res, "unavailable", "out of memory"), GG_HTTP_DONE;
    if (!gg_store_graph_get_version(gw->store, t, g, version, &j->stored, &err)) {
        free(j);
        return store_error(res, &err);
    }
    j->pr = pr;
    j->tenant = t;
    j->graph = g;
    j->version = version;
    j->src = j->stored.source;
    j->len = j->stored.source_len;
    return graph_job_submit(gw, req, res, j);
}

static int delete_graph(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t"), *g = gg_http_param(req, "g");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    if (!gg_store_graph_delete(gw->store, t, g, &err)) return store_error(res, &err);
    gw_registry_remove(gw->registry, t, g);
    audit(gw, &pr, t, "graph.delete", g, NULL);
    return reply(res, 200, json_pack("{s:s,s:s,s:b}", "tenant", t, "graph", g, "deleted", 1));
}

/* ------------------------------------------------------------------ executions, audit */

/* since=: milliseconds since the epoch or an ISO 8601 UTC time; -1 when malformed. */
static long long parse_since(const char *s) {
    if (!s || !*s) return 0;
    char *end;
    long long ms = strtoll(s, &end, 10);
    if (*end == 0) return ms >= 0 ? ms : -1;
    struct tm tm = {0};
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest) return -1;
    long long frac = 0;
    if (*rest == '.') {
        int digits = 0;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
            if (digits < 3) frac = frac * 10 + (*rest - '0');
        while (digits > 0 && digits < 3) frac *= 10, digits++;
    }
    if (*rest != 'Z' && *rest != 0) return -1;
    return (long long)timegm(&tm) * 1000 + frac;
}

/* A run answered from the history journal may not be committed yet: an executions query
 * first waits (a batch, about flush_interval at most) for everything answered before it,
 * so a client that got an answer always finds its run. */
static void history_caught_up(gg_gateway *gw) {
    if (gg_history_journaling(gw->history)) gg_history_flush(gw->history);
}

static int list_executions(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr)) return GG_HTTP_DONE;
    gg_exec_filter f = {gg_http_query(req, "graph"), gg_http_query(req, "tool"), gg_http_query(req, "status"), 0, 0,
                        gg_http_query(req, "cursor")};
    f.since_ms = parse_since(gg_http_query(req, "since"));
    if (f.since_ms < 0) return gg_http_res_fail(res, "bad_request", "since: milliseconds or an ISO 8601 UTC time"), GG_HTTP_DONE;
    const char *lim = gg_http_query(req, "limit");
    if (lim) {
        char *end;
        long l = strtol(lim, &end, 10);
        if (*end || l < 1 || l > 1000) return gg_http_res_fail(res, "bad_request", "limit: 1..1000"), GG_HTTP_DONE;
        f.limit = (int)l;
    }
    gg_error err = GG_ERROR_INIT;
    history_caught_up(gw);
    json_t *l = gg_store_executions_list(gw->store, t, &f, &err);
    if (!l) return store_error(res, &err);
    return reply_history(res, l);
}

static int get_execution(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    /* ?tenant=: a tenant's route, so the tenant's console token is taken too */
    const char *qt = gg_http_query(req, "tenant");
    if (qt ? !admin_auth(gw, req, res, qt, GG_SCOPE_GRAPHS_WRITE, &pr)
           : !gw_origin_host_ok(gw, req, res) || !gw_authenticate(gw, req, res, &pr))
        return GG_HTTP_DONE;
    bool admin = !qt && (pr.scopes & GG_SCOPE_ADMIN);
    if (!admin && !gg_scope_allows(pr.scopes, GG_SCOPE_GRAPHS_WRITE)) {
        gw_insufficient_scope(res, GG_SCOPE_GRAPHS_WRITE);
        return GG_HTTP_DONE;
    }
    gg_error err = GG_ERROR_INIT;
    history_caught_up(gw);
    /* another tenant's execution is "not found", never "forbidden": ids reveal nothing */
    json_t *e = gg_store_execution_get(gw->store, admin ? NULL : qt ? qt : pr.tenant, gg_http_param(req, "id"), &err);
    if (!e) return store_error(res, &err);
    gw_oauth_caller(gw, e);
    return reply_history(res, e);
}

static int list_audit(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    if (!admin_auth(gw, req, res, NULL, GG_SCOPE_ADMIN, &pr)) return GG_HTTP_DONE;
    const char *lim = gg_http_query(req, "limit"), *before = gg_http_query(req, "before");
    gg_error err = GG_ERROR_INIT;
    json_t *l = gg_store_audit_list(gw->store, gg_http_query(req, "tenant"), before ? atoll(before) : 0,
                                    lim ? atoi(lim) : 0, &err);
    if (!l) return store_error(res, &err);
    return reply(res, 200, json_pack("{s:o}", "entries", l));
}

/* ------------------------------------------------------------------ usage */

/* What a tenant holds now against its limits: graphs (store), execution history (store,
 * kept current by triggers; dropped = runs the quota pass removed), MCP sessions and GET
 * streams (this process), calls holding one of the tenant's execution slots. */
static int tenant_usage(gg_http_req *req, gg_http_res *res, void *user) {
    gg_gateway *gw = user;
    gg_principal pr;
    const char *t = gg_http_param(req, "t");
    if (!admin_auth(gw, req, res, t, GG_SCOPE_GRAPHS_WRITE, &pr) || !tenant_exists(gw, res, t)) return GG_HTTP_DONE;
    gg_error err = GG_ERROR_INIT;
    gg_graph_usage gu;
    gg_history_usage hu;
    long long ncat = 0, catbytes = 0; /* downstream tool catalogs: their own quota, tenants.max_catalog_bytes */
    if (!gg_store_graph_usage(gw->store, t, &gu, &err) || !gg_store_history_usage(gw->store, t, &hu, &err) ||
        !gg_store_downstream_usage(gw->store, t, &ncat, &catbytes, &err))
        return store_error(res, &err);
    size_t live = 0, revoked = 0;
    mcp_sessions_owner_usage(gw->sessions, t, &live, &revoked, NULL);
    const gg_config *c = gw->cfg;
    json_t *body =
                 json_pack("{s:s, s:{s:I,s:I,s:I,s:I}, s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},"
                           " s:{s:I,s:I,s:I}, s:{s:I,s:I}, s:{s:I,s:I}, s:{s:I,s:I}}",
                           "tenant", t,
                           "graphs", "count", (json_int_t)gu.graphs, "versions", (json_int_t)gu.versions,
                           "active_bytes", (json_int_t)gu.active_bytes, "stored_bytes", (json_int_t)gu.stored_bytes,
                           "history", "rows", (json_int_t)hu.rows, "bytes", (json_int_t)hu.bytes,
                           "max_rows", (json_int_t)c->history_tenant_max_rows,
                           "max_bytes", (json_int_t)c->history_tenant_max_bytes,
                           "dropped", (json_int_t)hu.dropped, "dropped_bytes", (json_int_t)hu.dropped_bytes,
                           "max_run_records", (json_int_t)c->history_max_run_records,
                           "max_run_bytes", (json_int_t)c->history_max_run_bytes,
                           "sessions", "live", (json_int_t)live, "deleted_unexpired", (json_int_t)revoked,
                           "max", (json_int_t)c->tenant_max_sessions,
                           "streams", "open", (json_int_t)gw_streams_tenant_count(gw->streams, t),
                           "max", (json_int_t)c->tenant_max_streams,
                           "resumable_streams", "open", (json_int_t)gw_streams_tenant_posts(gw->streams, t),
                           "max", (json_int_t)c->tenant_max_resumable_streams,
                           "calls", "in_progress", (json_int_t)gg_auth_exec_in_use(gw->auth, t),
                           "max", (json_int_t)c->tenant_max_concurrent);
    if (body)
        json_object_set_new(body, "catalogs", json_pack("{s:I,s:I,s:I}", "count", (json_int_t)ncat, "bytes",
                                                        (json_int_t)catbytes, "max_bytes",
                                                        (json_int_t)c->tenant_max_catalog_bytes));
    return reply(res, 200, body);
}

/* ------------------------------------------------------------------ routes */

/* Register every admin route on the public listener. */
bool gw_admin_install_routes(gg_gateway *gw, gg_error *err) {
    static const struct {
        const char *method, *pattern;
        gg_http_handler fn;
    } routes[] = {
        {"PUT", "/admin/tenants/{t}", put_tenant},
        {"GET", "/admin/tenants", list_tenants},
        {"DELETE", "/admin/tenants/{t}", delete_tenant},
        {"POST", "/admin/tenants/{t}/keys", create_key},
        {"GET", "/admin/tenants/{t}/keys", list_keys},
        {"DELETE", "/admin/keys/{id}", delete_key},
        {"PUT", "/admin/tenants/{t}/graphs/{g}", put_graph},
        {"GET", "/admin/tenants/{t}/graphs", list_graphs},
        {"GET", "/admin/tenants/{t}/graphs/{g}", get_graph},
        {"GET", "/admin/tenants/{t}/graphs/{g}/versions", graph_versions},
        {"POST", "/admin/tenants/{t}/graphs/{g}/activate", activate_graph},
        {"DELETE", "/admin/tenants/{t}/graphs/{g}", delete_graph},
        {"GET", "/admin/tenants/{t}/executions", list_executions},
        {"GET", "/admin/executions/{id}", get_execution},
        {"GET", "/admin/audit", list_audit},
        {"GET", "/admin/tenants/{t}/usage", tenant_usage},
        {"GET", "/admin/tenants/{t}/principals", gw_oauth_principals},
        {"GET", "/admin/tenants/{t}/downstream", gw_downstream_list},
        {"POST", "/admin/tenants/{t}/downstream/sync", gw_downstream_sync},
        {"POST", "/admin/tenants/{t}/downstream/changes/{id}/approve", gw_downstream_approve},
        {"POST", "/admin/tenants/{t}/downstream/changes/{id}/reject", gw_downstream_reject},
        {"PUT", "/admin/tenants/{t}/views/{name}", gw_views_put},
        {"GET", "/admin/tenants/{t}/views", gw_views_list},
        {"GET", "/admin/tenants/{t}/views/{name}", gw_views_get},
        {"DELETE", "/admin/tenants/{t}/views/{name}", gw_views_delete},
    };
    if (!(gw->uploads = gw_uploads_new(gw->cfg->graphs_upload_threads, gw->cfg->graphs_uploads_per_tenant))) {
        gg_error_set(err, "oom", "cannot start the graph upload threads");
        return false;
    }
    gg_router *r = gg_http_server_router(gw->app->http);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!gg_router_add(r, GG_LISTENER_PUBLIC, routes[i].method, routes[i].pattern, routes[i].fn, gw, err))
            return false;
    return true;
}
