/* pins.c — pinned downstream tool definitions (issue 28). An upload pins each proxied
 * tool's and each mcp node's called tool's definition (its pinned part, hashed over
 * canonical JSON); the gateway stores them with the version. A stored version compiled
 * again (a recompile after the server's catalog changed, a first use) is served from its
 * pins under `on_change: review`, and under `quarantine` a tool whose definition moved
 * from its pin (or that appeared, or went away) is withheld; `follow` takes the catalog as
 * it is. Suspicious text (util/suspicious.h) in a definition is a finding at upload. */
#include "graph/internal.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/suspicious.h"

static const char *const PIN_FIELDS[] = {"name", "title", "description", "inputSchema", "outputSchema", "annotations"};
#define PIN_NFIELDS (sizeof PIN_FIELDS / sizeof PIN_FIELDS[0])

int gg_graph_on_change_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "review")) return GG_ON_CHANGE_REVIEW;
    if (!strcmp(s, "quarantine")) return GG_ON_CHANGE_QUARANTINE;
    if (!strcmp(s, "follow")) return GG_ON_CHANGE_FOLLOW;
    return -1;
}

const char *gg_graph_on_change_name(gg_on_change m) {
    return m == GG_ON_CHANGE_QUARANTINE ? "quarantine" : m == GG_ON_CHANGE_FOLLOW ? "follow" : "review";
}

json_t *gg_graph_pins(const gg_graph *g) { return g->pins; }

json_t *gg_graph_tool_pin_part(const json_t *def) {
    json_t *o = json_object();
    for (size_t i = 0; o && i < PIN_NFIELDS; i++) {
        json_t *v = json_object_get(def, PIN_FIELDS[i]);
        if (v) json_object_set(o, PIN_FIELDS[i], v);
    }
    return o;
}

bool gg_graph_tool_hash(const json_t *def, char out[65]) {
    json_t *part = gg_graph_tool_pin_part(def);
    char *text = part ? json_dumps(part, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) : NULL;
    json_decref(part);
    out[0] = 0;
    if (!text) return false;
    unsigned char h[32];
    crypto_generichash(h, sizeof h, (const unsigned char *)text, strlen(text), NULL, 0);
    free(text);
    sodium_bin2hex(out, 65, h, sizeof h);
    return true;
}

/* ---- diff ------------------------------------------------------------------------------ */

static void add_reason(json_t *arr, const char *fmt, const char *name) {
    char buf[200];
    snprintf(buf, sizeof buf, fmt, name);
    if (json_array_size(arr) < 32) json_array_append_new(arr, json_string(buf)); /* bounded: a schema may be large */
}

/* An inputSchema change a client written against the old one breaks on. */
static void incompatible(const json_t *old, const json_t *new, json_t *out) {
    json_t *op = json_object_get(old, "properties"), *np = json_object_get(new, "properties");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)op, k, v) {
        json_t *nv = json_object_get(np, k);
        if (!nv) add_reason(out, "inputSchema property '%.100s' removed", k);
        else if (!json_equal(json_object_get(v, "type"), json_object_get(nv, "type")))
            add_reason(out, "inputSchema property '%.100s' changed type", k);
    }
    size_t i;
    json_array_foreach(json_object_get(new, "required"), i, v) {
        bool was = false;
        size_t j;
        json_t *w;
        json_array_foreach(json_object_get(old, "required"), j, w) was = was || json_equal(v, w);
        if (!was && json_is_string(v)) add_reason(out, "inputSchema property '%.100s' newly required", json_string_value(v));
    }
    if (!json_equal(json_object_get(old, "type"), json_object_get(new, "type"))) add_reason(out, "inputSchema %stype changed", "");
}

json_t *gg_graph_tool_diff(const json_t *old, const json_t *new) {
    json_t *fields = json_array(), *bad = json_array();
    for (size_t i = 0; i < PIN_NFIELDS; i++) {
        json_t *a = json_object_get(old, PIN_FIELDS[i]), *b = json_object_get(new, PIN_FIELDS[i]);
        if ((a || b) && !(a && b && json_equal(a, b))) json_array_append_new(fields, json_string(PIN_FIELDS[i]));
    }
    if (old && new) incompatible(json_object_get(old, "inputSchema"), json_object_get(new, "inputSchema"), bad);
    else if (old) json_array_append_new(bad, json_string("tool removed"));
    return json_pack("{s:o,s:o}", "fields", fields, "incompatible", bad);
}

/* ---- recording and applying ------------------------------------------------------------ */

void gg_graph_pin_record(gg_graph *g, const gserver *s, const json_t *def) {
    const char *name = json_string_value(json_object_get(def, "name"));
    if ((!name && def) || s->target_graph) return;
    char id[GG_GRAPH_IDENTITY_MAX];
    gg_graph_server_identity(s, id);
    if (!g->pins) g->pins = json_object();
    json_t *e = json_object_get(g->pins, id);
    if (!e) {
        e = json_pack("{s:s,s:s,s:{}}", "server", s->name, "on_change", gg_graph_on_change_name(s->on_change), "tools");
        if (!e || json_object_set_new(g->pins, id, e) != 0) return;
    }
    if (!def) { /* a `tools: all` entry: a tool the server adds later is a change too */
        json_object_set_new(e, "whole", json_true());
        return;
    }
    json_t *tools = json_object_get(e, "tools");
    if (!json_object_get(tools, name)) json_object_set_new(tools, name, gg_graph_tool_pin_part(def));
}

void gg_graph_suspicious_check(const gserver *s, const json_t *def, gg_graph_diags *d, const char *file, int line, int col) {
    json_t *part = gg_graph_tool_pin_part(def);
    uint32_t cp = 0;
    char where[128];
    size_t n = part ? gg_suspicious_json(part, &cp, where, sizeof where) : 0;
    json_decref(part);
    if (!n) return;
    gg_graph_diag_add(d, s->suspicious_reject ? GG_DIAG_ERROR : GG_DIAG_WARNING, "suspicious_text", file, line, col, NULL, NULL,
                      "server '%s' tool '%.100s': %zu invisible or direction-changing character(s), the first U+%04X at %s%s",
                      s->name, json_string_value(json_object_get(def, "name")), n, (unsigned)cp, where,
                      s->suspicious_reject ? " (suspicious_text: reject)" : "");
}

/* The catalog entry named name, or NULL. */
static json_t *entry_named(json_t *cat, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(cat, i, t)
        if (json_is_string(json_object_get(t, "name")) && !strcmp(json_string_value(json_object_get(t, "name")), name)) return t;
    return NULL;
}

/* Whether the catalog entry has the pinned definition (compared by hash: the pinned part). */
static bool same_def(const json_t *a, const json_t *b) {
    char ha[65], hb[65];
    return gg_graph_tool_hash(a, ha) && gg_graph_tool_hash(b, hb) && !strcmp(ha, hb);
}

json_t *gg_graph_pin_apply(const gserver *s, json_t *cat, json_t *pins, json_t **held) {
    *held = NULL;
    if (!json_is_object(pins) || s->on_change == GG_ON_CHANGE_FOLLOW) return json_incref(cat);
    json_t *out = json_array();
    const char *name;
    json_t *pin;
    if (s->on_change == GG_ON_CHANGE_REVIEW) { /* the pins as they are; calls go to the tool by name */
        json_object_foreach(pins, name, pin) json_array_append(out, pin);
        return out;
    }
    *held = json_object();
    json_object_foreach(pins, name, pin) {
        json_t *now = entry_named(cat, name);
        if (now && same_def(now, pin)) json_array_append(out, now);
        else json_object_set_new(*held, name, json_true()); /* changed or removed */
    }
    size_t i;
    json_t *t;
    json_array_foreach(cat, i, t) { /* added since */
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && !json_object_get(pins, n)) json_object_set_new(*held, n, json_true());
    }
    return out;
}

bool gg_graph_tool_withheld(const gg_graph *g, const char *name) {
    return g->withheld && name && json_object_get(g->withheld, name) != NULL;
}

/* ---- mcp nodes ------------------------------------------------------------------------- */

bool gg_graph_server_called(const gg_graph *g, const gserver *s) {
    for (size_t t = 0; t < g->ntools; t++)
        for (size_t n = 0; n < g->tools[t].nnodes; n++)
            if (g->tools[t].nodes[n].type == GN_MCP && g->tools[t].nodes[n].server == s) return true;
    return false;
}

/* Flag the mcp nodes of g calling s's tools that held names (borrowed, may be NULL). */
static void withhold_nodes(gg_graph *g, const gserver *s, json_t *held) {
    for (size_t t = 0; held && t < g->ntools; t++)
        for (size_t n = 0; n < g->tools[t].nnodes; n++) {
            gnode *nd = &g->tools[t].nodes[n];
            if (nd->type == GN_MCP && nd->server == s && nd->tool && json_object_get(held, nd->tool)) nd->withheld = true;
        }
}

void gg_graph_pin_nodes(gg_graph *g, const gg_graph_options *o) {
    if (!o || !o->pinned) return;
    for (size_t i = 0; i < g->nservers; i++) {
        gserver *s = &g->servers[i];
        if (s->target_graph || s->on_change != GG_ON_CHANGE_QUARANTINE || !gg_graph_server_called(g, s)) continue;
        char id[GG_GRAPH_IDENTITY_MAX];
        gg_graph_server_identity(s, id);
        json_t *pins = o->pinned(o->pinned_user, s->name, id);
        /* no catalog known (never listed, none stored): nothing seen to differ from the pins */
        json_t *cat = pins && o->catalog ? o->catalog(o->catalog_user, s->name, id) : NULL, *held = NULL;
        if (json_is_array(cat)) json_decref(gg_graph_pin_apply(s, cat, pins, &held));
        withhold_nodes(g, s, held);
        const char *name;
        json_t *def;
        json_object_foreach(pins, name, def) gg_graph_pin_record(g, s, def);
        json_decref(held);
        json_decref(cat);
        json_decref(pins);
    }
}
