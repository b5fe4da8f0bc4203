/* parser.c — JSONata tokenizer and Pratt parser. Produces the final AST directly: path
 * steps are merged while parsing, predicates become stages on the last step, group-by,
 * order-by, focus (@) and index (#) bindings are attached where the evaluator expects
 * them, and tail calls in lambda bodies are marked for trampolining. */
#include "jsonata/core.h"
#include "jsonata/fnlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARSE_DEPTH 500
/* The AST height an expression may reach, counting each operator of a chain (1+1+1...,
 * a ~> f ~> g...) as a level: every walk of the AST (labelling, freeing, evaluation)
 * recurses on it, so input must not choose it freely. */
#define MAX_NESTING 1000

typedef enum { T_END, T_OP, T_NAME, T_VAR, T_STR, T_NUM, T_VALUE, T_REGEX } tok_type;

typedef struct token {
    tok_type type;
    char *s; /* op text, name, string contents, value name ("true"...) */
    size_t len;
    double num;
    char flags[4]; /* regex flags */
    int position;  /* offset just past the token */
    int start;
} token;

typedef struct parser {
    const char *src;
    size_t len, pos;
    token tok;     /* current lookahead */
    bool prev_operand; /* previous token ends an operand (so '/' is division) */
    const jsonata_env *env;
    gg_error *err;
    int depth;
    int nest_max; /* largest nesting returned by an inner expression() of the current one */
    struct slot { int level, label; } *slots;
    gg_error pending; /* S0213 is reported only when the syntax is otherwise valid */
    bool end_seen;    /* an operand was missing at the end of the input */
    int end_pos;
    int nslots;
} parser;

static const char *const ops2[] = {"..", ":=", "!=", ">=", "<=", "**", "~>", "?:", "??", NULL};
static const char ops1[] = ".[]{}(),@#;:?+-*/%|=<>^&!~";

static int lbp_of(const token *t) {
    if (t->type != T_OP) return 0;
    const char *s = t->s;
    if (!strcmp(s, ".")) return 75;
    if (!strcmp(s, "[") || !strcmp(s, "(") || !strcmp(s, "@") || !strcmp(s, "#")) return 80;
    if (!strcmp(s, "{")) return 70;
    if (!strcmp(s, "?")) return 20;
    if (!strcmp(s, "+") || !strcmp(s, "-") || !strcmp(s, "&")) return 50;
    if (!strcmp(s, "*") || !strcmp(s, "/") || !strcmp(s, "%") || !strcmp(s, "**")) return 60;
    if (!strcmp(s, "=") || !strcmp(s, "<") || !strcmp(s, ">") || !strcmp(s, "^") ||
        !strcmp(s, "!=") || !strcmp(s, "<=") || !strcmp(s, ">=") || !strcmp(s, "~>") ||
        !strcmp(s, "in") || !strcmp(s, "?:") || !strcmp(s, "??"))
        return 40;
    if (!strcmp(s, ":=")) return 10;
    if (!strcmp(s, "and")) return 30;
    if (!strcmp(s, "or")) return 25;
    return 0;
}

static bool perr(parser *p, const char *code, int pos, const char *fmt, const char *tok) {
    if (gg_error_is_set(p->err)) return false;
    gg_error_set(p->err, code, fmt, tok ? tok : "");
    p->err->position = pos;
    if (tok) gg_error_set_path(p->err, tok);
    return false;
}

static void tok_clear(token *t) {
    free(t->s);
    memset(t, 0, sizeof *t);
}

static bool is_name_char(char c) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return false;
    if (c == '\0') return false;
    return strchr(ops1, c) == NULL; /* quotes inside a name are part of it, as in the reference */
}

static bool set_tok(parser *p, tok_type type, const char *s, size_t len) {
    p->tok.type = type;
    p->tok.s = malloc(len + 1);
    if (!p->tok.s) {
        jn_oom(p->err);
        return false;
    }
    memcpy(p->tok.s, s, len);
    p->tok.s[len] = '\0';
    p->tok.len = len;
    return true;
}

static bool lex_string(parser *p, char q) {
    gg_strbuf b = GG_STRBUF_INIT;
    size_t i = p->pos + 1;
    while (i < p->len) {
        char c = p->src[i];
        if (c == q) {
            p->pos = i + 1;
            p->tok.type = T_STR;
            p->tok.len = b.len;
            p->tok.s = b.data ? gg_strbuf_take(&b) : strdup("");
            if (!p->tok.s || b.oom) {
                jn_oom(p->err);
                return false;
            }
            return true;
        }
        if (c == '\\') {
            i++;
            if (i >= p->len) break;
            c = p->src[i];
            switch (c) {
            case '"': case '\\': case '/': case '\'': gg_strbuf_putc(&b, c); break;
            case 'b': gg_strbuf_putc(&b, '\b'); break;
            case 'f': gg_strbuf_putc(&b, '\f'); break;
            case 'n': gg_strbuf_putc(&b, '\n'); break;
            case 'r': gg_strbuf_putc(&b, '\r'); break;
            case 't': gg_strbuf_putc(&b, '\t'); break;
            case 'u': {
                int cp = (i + 4 < p->len) ? gg_hex4(p->src + i + 1) : -1;
                if (cp < 0) {
                    gg_strbuf_free(&b);
                    return perr(p, "S0104", (int)i, "The escape sequence \\u must be followed by 4 hex digits", NULL);
                }
                i += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < p->len + 0 && p->src[i + 1] == '\\' &&
                    p->src[i + 2] == 'u') {
                    int lo = gg_hex4(p->src + i + 3);
                    if (lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                /* a lone surrogate is kept as its 3-byte (WTF-8) form, like a JS string */
                char u[4];
                gg_strbuf_append(&b, u, gg_utf8_encode((uint32_t)cp, u));
                break;
            }
            default:
                gg_strbuf_free(&b);
                return perr(p, "S0103", (int)i, "Unsupported escape sequence: \\%s", NULL);
            }
            i++;
            continue;
        }
        gg_strbuf_putc(&b, c);
        i++;
    }
    gg_strbuf_free(&b);
    return perr(p, "S0101", (int)i, "String literal must be terminated by a matching quote", NULL);
}

static bool lex_regex(parser *p) {
    size_t start = p->pos + 1, i = start;
    int depth = 0;
    while (i < p->len) {
        char c = p->src[i];
        if (c == '\\') { i += 2; continue; }
        if (c == '[' || c == '(' || c == '{') depth++;
        else if (c == ']' || c == ')' || c == '}') depth--;
        else if (c == '/' && depth == 0) break;
        i++;
    }
    if (i >= p->len) return perr(p, "S0302", (int)i, "No terminating / in regular expression", NULL);
    if (i == start) return perr(p, "S0301", (int)i, "Empty regular expressions are not allowed", NULL);
    if (!set_tok(p, T_REGEX, p->src + start, i - start)) return false;
    i++;
    size_t fi = 0;
    while (i < p->len && (p->src[i] == 'i' || p->src[i] == 'm')) {
        if (fi < 3) p->tok.flags[fi++] = p->src[i];
        i++;
    }
    p->pos = i;
    return true;
}

/* Advance the lookahead token. */
static bool lex(parser *p) {
    bool prev_operand = p->prev_operand;
    tok_clear(&p->tok);
    for (;;) {
        while (p->pos < p->len && strchr(" \t\n\r\v\f", p->src[p->pos])) p->pos++;
        if (p->pos + 1 < p->len && p->src[p->pos] == '/' && p->src[p->pos + 1] == '*') {
            const char *end = strstr(p->src + p->pos + 2, "*/");
            if (!end) return perr(p, "S0106", (int)p->pos, "Comment has no closing tag", NULL);
            p->pos = (size_t)(end - p->src) + 2;
            continue;
        }
        break;
    }
    p->tok.start = (int)p->pos;
    if (p->pos >= p->len) {
        p->tok.type = T_END;
        p->tok.position = (int)p->pos;
        return true;
    }
    const char *s = p->src + p->pos;
    char c = *s;
    bool ok = true;
    if (c == '/' && !prev_operand) {
        ok = lex_regex(p);
    } else if (c == '"' || c == '\'') {
        ok = lex_string(p, c);
    } else if (c == '`') {
        const char *end = memchr(s + 1, '`', p->len - p->pos - 1);
        if (!end) return perr(p, "S0105", (int)p->pos, "Quoted property name must be terminated with a backquote (`)", NULL);
        ok = set_tok(p, T_NAME, s + 1, (size_t)(end - s - 1));
        p->pos = (size_t)(end - p->src) + 1;
    } else if (c >= '0' && c <= '9') {
        size_t i = p->pos;
        if (p->src[i] == '0') i++;
        else while (i < p->len && p->src[i] >= '0' && p->src[i] <= '9') i++;
        if (i + 1 < p->len && p->src[i] == '.' && p->src[i + 1] >= '0' && p->src[i + 1] <= '9') {
            i++;
            while (i < p->len && p->src[i] >= '0' && p->src[i] <= '9') i++;
        }
        if (i < p->len && (p->src[i] == 'e' || p->src[i] == 'E')) {
            size_t j = i + 1;
            if (j < p->len && (p->src[j] == '+' || p->src[j] == '-')) j++;
            if (j < p->len && p->src[j] >= '0' && p->src[j] <= '9') {
                while (j < p->len && p->src[j] >= '0' && p->src[j] <= '9') j++;
                i = j;
            }
        }
        ok = set_tok(p, T_NUM, s, i - p->pos);
        if (ok) {
            p->tok.num = strtod(p->tok.s, NULL);
            if (!isfinite(p->tok.num))
                return perr(p, "S0102", (int)i, "Number out of range: %s", p->tok.s);
        }
        p->pos = i;
    } else if (c == '$') {
        size_t i = p->pos + 1;
        while (i < p->len && is_name_char(p->src[i])) i++;
        ok = set_tok(p, T_VAR, s + 1, i - p->pos - 1);
        p->pos = i;
    } else {
        bool isop = false;
        for (int k = 0; ops2[k]; k++)
            if (p->pos + 1 < p->len && s[0] == ops2[k][0] && s[1] == ops2[k][1]) {
                ok = set_tok(p, T_OP, s, 2);
                p->pos += 2;
                isop = true;
                break;
            }
        if (!isop && (c == '!' || c == '~'))
            return perr(p, "S0204", (int)p->pos + 1, "Unknown operator: %s", c == '!' ? "!" : "~");
        if (!isop && strchr(ops1, c)) {
            ok = set_tok(p, T_OP, s, 1);
            p->pos += 1;
            isop = true;
        }
        if (!isop) {
            size_t i = p->pos;
            /* 'λ' is U+03BB (2 bytes) and counts as a name */
            while (i < p->len && is_name_char(p->src[i])) i++;
            size_t n = i - p->pos;
            if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5)) ||
                (n == 4 && !memcmp(s, "null", 4)))
                ok = set_tok(p, T_VALUE, s, n);
            else if ((n == 3 && !memcmp(s, "and", 3)) || (n == 2 && !memcmp(s, "or", 2)) ||
                     (n == 2 && !memcmp(s, "in", 2)))
                ok = set_tok(p, T_OP, s, n);
            else
                ok = set_tok(p, T_NAME, s, n);
            p->pos = i;
        }
    }
    if (!ok) return false;
    p->tok.position = (int)p->pos;
    /* decide whether a following '/' divides */
    if (p->tok.type == T_OP) {
        const char *o = p->tok.s;
        p->prev_operand = !strcmp(o, ")") || !strcmp(o, "]") || !strcmp(o, "}") ||
                          !strcmp(o, "*") || !strcmp(o, "**") || !strcmp(o, "%");
    } else {
        p->prev_operand = true;
    }
    return true;
}

static bool is_op(const token *t, const char *o) { return t->type == T_OP && !strcmp(t->s, o); }

/* ---- nodes ---- */
static jn_node *node_new(parser *p, jn_ntype type, int pos) {
    jn_node *n = calloc(1, sizeof *n);
    if (!n) {
        jn_oom(p->err);
        return NULL;
    }
    n->type = type;
    n->position = pos;
    return n;
}

void jn_node_free(jn_node *n) {
    if (!n) return;
    free(n->str);
    jn_free_immortal(n->value);
    jn_node_free(n->lhs);
    jn_node_free(n->rhs);
    jn_node_free(n->third);
    for (int i = 0; i < n->nitems; i++) jn_node_free(n->items[i]);
    free(n->items);
    for (int i = 0; i < n->npairs; i++) {
        jn_node_free(n->pairs[i].key);
        jn_node_free(n->pairs[i].val);
    }
    free(n->pairs);
    for (int i = 0; i < n->nterms; i++) jn_node_free(n->terms[i].expr);
    free(n->terms);
    for (int i = 0; i < n->nstages; i++) {
        jn_node_free(n->stages[i].expr);
        free(n->stages[i].var);
    }
    free(n->stages);
    jn_node_free(n->group);
    free(n->focus);
    free(n->index);
    free(n->label);
    free(n->seek);
    if (n->sig) jn_sig_free(n->sig);
    jn_free_immortal(n->builtin_fn);
    free(n);
}

/* strdup that records out-of-memory in the parse error (callers then fail the parse) */
static char *pstrdup(parser *p, const char *s) {
    char *d = strdup(s);
    if (!d) jn_oom(p->err);
    return d;
}

static bool push_item(parser *p, jn_node *n, jn_node *item) {
    jn_node **ni = realloc(n->items, (size_t)(n->nitems + 1) * sizeof *ni);
    if (!ni) {
        jn_node_free(item);
        jn_oom(p->err);
        return false;
    }
    n->items = ni;
    n->items[n->nitems++] = item;
    return true;
}

static bool push_stage(parser *p, jn_node *n, int kind, jn_node *expr, const char *var, int pos) {
    jn_stage *ns = realloc(n->stages, (size_t)(n->nstages + 1) * sizeof *ns);
    if (!ns) {
        jn_node_free(expr);
        jn_oom(p->err);
        return false;
    }
    n->stages = ns;
    jn_stage *st = &n->stages[n->nstages++];
    st->kind = kind;
    st->expr = expr;
    st->var = NULL;
    st->position = pos;
    /* the stage (and its expr) now belongs to n; only the name copy can still fail */
    return !var || (st->var = pstrdup(p, var)) != NULL;
}

static bool push_pair(parser *p, jn_node *n, jn_node *k, jn_node *v) {
    jn_pair *np = realloc(n->pairs, (size_t)(n->npairs + 1) * sizeof *np);
    if (!np) {
        jn_node_free(k);
        jn_node_free(v);
        jn_oom(p->err);
        return false;
    }
    n->pairs = np;
    n->pairs[n->npairs].key = k;
    n->pairs[n->npairs].val = v;
    n->npairs++;
    return true;
}


static char *take_tok_str(token *t) {
    char *s = t->s;
    t->s = NULL;
    return s;
}

static jn_node *expression(parser *p, int rbp);

static bool expect(parser *p, const char *o) {
    if (gg_error_is_set(p->err)) return false;
    if (p->tok.type == T_END) {
        perr(p, "S0203", p->tok.position, "Expected %s before end of expression", o);
        gg_error_set_path(p->err, "(end)");
        return false;
    }
    if (!is_op(&p->tok, o)) {
        gg_error_set(p->err, "S0202", "Expected \"%s\", got \"%s\"", o, p->tok.s ? p->tok.s : "");
        p->err->position = p->tok.position;
        gg_error_set_path(p->err, p->tok.s);
        return false;
    }
    return lex(p);
}

/* Wrap a node in a path unless it is one already. */
static jn_node *as_path(parser *p, jn_node *n) {
    if (n->type == N_PATH) return n;
    jn_node *path = node_new(p, N_PATH, n->position);
    if (!path) {
        jn_node_free(n);
        return NULL;
    }
    if (!push_item(p, path, n)) {
        jn_node_free(path);
        return NULL;
    }
    path->keep_array = n->keep_array;
    return path;
}

/* Builtins that only pass objects along (or inspect them through jn_object_get,
 * jn_deep_equal, jn_to_string, which handle lazy objects, or jn_force just the objects
 * they read, as $keys) — their arguments are not materialized, which keeps e.g.
 * $count(items) from converting every item. */
static bool lazy_safe_builtin(const char *name) {
    static const char *const names[] = {
        "count", "exists", "type", "boolean", "not", "reverse", "append", "sum", "max", "min",
        "average", "map", "filter", "single", "reduce", "sort", "zip", "shuffle", "string",
        "distinct", "length", "substring", "substringBefore", "substringAfter", "uppercase",
        "lowercase", "trim", "pad", "contains", "split", "join", "number", "abs", "floor",
        "ceil", "round", "power", "sqrt", "keys", "lookup", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

static void resolve_builtin(parser *p, jn_node *n) {
    if (p->env) {
        for (size_t i = 0; i < p->env->n; i++)
            if (!strcmp(p->env->fns[i]->name, n->str)) {
                n->ext = p->env->fns[i];
                return;
            }
    }
    for (size_t i = 0; i < jn_builtins_count; i++)
        if (!strcmp(jn_builtins[i].name, n->str)) {
            jn_function *f = calloc(1, sizeof *f);
            if (!f) { jn_oom(p->err); return; }
            f->kind = FN_NATIVE;
            f->builtin = &jn_builtins[i];
            f->lazy_ok = lazy_safe_builtin(jn_builtins[i].name);
            f->native = jn_builtins[i].fn;
            if (jn_builtins[i].signature) {
                f->sig = jn_sig_parse(jn_builtins[i].signature, p->err);
                if (!f->sig) { free(f); return; }
            }
            n->builtin = &jn_builtins[i];
            n->builtin_fn = jn_function_value(f);
            if (!n->builtin_fn) { jn_oom(p->err); return; }
            jn_make_immortal(n->builtin_fn);
            return;
        }
}

static jn_node *parse_lambda(parser *p, jn_node *args_holder, int pos);
static jn_node *binary(parser *p, jn_op op, jn_node *lhs, int bp, int pos);

/* ---- parent (%) resolution: slots are resolved against preceding path steps ---- */
static int slot_new(parser *p) {
    struct slot *ns = realloc(p->slots, (size_t)(p->nslots + 1) * sizeof *ns);
    if (!ns) {
        jn_oom(p->err);
        return -1;
    }
    p->slots = ns;
    p->slots[p->nslots].level = 1;
    p->slots[p->nslots].label = p->nslots;
    return p->nslots++;
}

static void seek_add(parser *p, jn_node *n, int si) {
    for (int i = 0; i < n->nseek; i++)
        if (n->seek[i] == si) return;
    int *ns = realloc(n->seek, (size_t)(n->nseek + 1) * sizeof *ns);
    if (!ns) {
        jn_oom(p->err);
        return;
    }
    n->seek = ns;
    n->seek[n->nseek++] = si;
}

static void push_anc(parser *p, jn_node *dst, const jn_node *src) {
    if (!dst || !src) return;
    for (int i = 0; i < src->nseek; i++)
        if (p->slots[src->seek[i]].level > 0) seek_add(p, dst, src->seek[i]);
    if (src->type == N_PARENT && src->slot) seek_add(p, dst, src->slot - 1);
}

static const char *node_type_name(const jn_node *n) {
    switch (n->type) {
    case N_VAR: return "variable";
    case N_NUMBER: return "number";
    case N_STRING: return "string";
    case N_CALL: return "function";
    case N_ARRAY: return "unary";
    case N_OBJECT: return "unary";
    case N_BINARY: return "binary";
    case N_CONDITION: return "condition";
    case N_DESCENDANT: return "descendant";
    default: return "expression";
    }
}

static void seek_parent(parser *p, jn_node *n, int si) {
    if (gg_error_is_set(p->err)) return;
    switch (n->type) {
    case N_NAME:
    case N_WILDCARD:
        if (--p->slots[si].level == 0) {
            if (n->slot) p->slots[si].label = p->slots[n->slot - 1].label;
            n->slot = si + 1;
            n->tuple = true;
        }
        break;
    case N_PARENT: p->slots[si].level++; break;
    case N_BLOCK:
        if (n->nitems > 0) {
            n->tuple = true;
            seek_parent(p, n->items[n->nitems - 1], si);
        }
        break;
    case N_PATH: {
        n->tuple = true;
        int idx = n->nitems - 1;
        seek_parent(p, n->items[idx--], si);
        while (p->slots[si].level > 0 && idx >= 0) seek_parent(p, n->items[idx--], si);
        break;
    }
    default: {
        const char *t = node_type_name(n);
        perr(p, "S0217", n->position, "The object representing the 'parent' cannot be derived from this expression", t);
        break;
    }
    }
}

static void resolve_ancestry(parser *p, jn_node *path) {
    jn_node *last = path->items[path->nitems - 1];
    int nsl = last->nseek + 1;
    int *sl = malloc((size_t)nsl * sizeof *sl);
    if (!sl) {
        jn_oom(p->err);
        return;
    }
    int k = 0;
    for (int i = 0; i < last->nseek; i++) sl[k++] = last->seek[i];
    if (last->type == N_PARENT && last->slot) sl[k++] = last->slot - 1;
    for (int i = 0; i < k && !gg_error_is_set(p->err); i++) {
        int si = sl[i];
        int idx = path->nitems - 2;
        while (p->slots[si].level > 0 && !gg_error_is_set(p->err)) {
            if (idx < 0) {
                seek_add(p, path, si);
                break;
            }
            jn_node *step = path->items[idx--];
            while (idx >= 0 && step->focus && path->items[idx]->focus) step = path->items[idx--];
            seek_parent(p, step, si);
        }
    }
    free(sl);
}

/* Whether evaluating n may bind a variable in the enclosing scope (:= outside any
 * nested block or lambda, or $eval which may contain one). */
static bool binds_in_scope(const jn_node *n) {
    if (!n) return false;
    if (n->type == N_BIND) return true;
    if (n->type == N_LAMBDA || n->type == N_BLOCK) return false;
    if (n->type == N_VAR && n->str && !strcmp(n->str, "eval")) return true;
    if (binds_in_scope(n->lhs) || binds_in_scope(n->rhs) || binds_in_scope(n->third) ||
        binds_in_scope(n->group))
        return true;
    for (int i = 0; i < n->nitems; i++)
        if (binds_in_scope(n->items[i])) return true;
    for (int i = 0; i < n->npairs; i++)
        if (binds_in_scope(n->pairs[i].key) || binds_in_scope(n->pairs[i].val)) return true;
    for (int i = 0; i < n->nterms; i++)
        if (binds_in_scope(n->terms[i].expr)) return true;
    for (int i = 0; i < n->nstages; i++)
        if (binds_in_scope(n->stages[i].expr)) return true;
    return false;
}

static void assign_labels(parser *p, jn_node *n) {
    if (!n) return;
    if (n->type == N_BLOCK) {
        n->scope = false;
        for (int i = 0; i < n->nitems; i++)
            if (binds_in_scope(n->items[i])) n->scope = true;
    }
    if (n->slot && !n->label) {
        char buf[24];
        snprintf(buf, sizeof buf, "!%d", p->slots[n->slot - 1].label);
        n->label = pstrdup(p, buf); /* NULL sets p->err, checked after labelling */
    }
    assign_labels(p, n->lhs);
    assign_labels(p, n->rhs);
    assign_labels(p, n->third);
    assign_labels(p, n->group);
    for (int i = 0; i < n->nitems; i++) assign_labels(p, n->items[i]);
    for (int i = 0; i < n->npairs; i++) {
        assign_labels(p, n->pairs[i].key);
        assign_labels(p, n->pairs[i].val);
    }
    for (int i = 0; i < n->nterms; i++) assign_labels(p, n->terms[i].expr);
    for (int i = 0; i < n->nstages; i++) assign_labels(p, n->stages[i].expr);
}

/* The key: value, ... list of an object constructor or a step's grouping, through the
 * closing brace. `anc`: the pairs take part in parent (%) resolution (the constructor's
 * do; a grouping's are resolved with its step). */
static bool parse_pairs(parser *p, jn_node *obj, bool anc) {
    while (!is_op(&p->tok, "}")) {
        jn_node *k = expression(p, 0);
        if (!k) return false;
        if (!expect(p, ":")) {
            jn_node_free(k);
            return false;
        }
        jn_node *v = expression(p, 0);
        if (!v) {
            jn_node_free(k);
            return false;
        }
        if (anc) {
            push_anc(p, obj, k);
            push_anc(p, obj, v);
        }
        if (!push_pair(p, obj, k, v)) return false;
        if (!is_op(&p->tok, ",")) break;
        if (!lex(p)) return false;
    }
    return expect(p, "}");
}

/* ---- prefix operators (nud of an operator token): one function each; NULL on failure,
 * having freed what they built ---- */
static jn_node *nud_fail(jn_node *n) {
    jn_node_free(n);
    return NULL;
}

/* -e: a literal number is negated at parse time */
static jn_node *nud_negate(parser *p, token *t) {
    jn_node *e = expression(p, 70);
    if (!e) return NULL;
    if (e->type == N_NUMBER) { /* a new value: numbers are shared, never changed (jn_number) */
        jn_value *neg = jn_number(-e->num);
        if (!neg) {
            jn_oom(p->err);
            return nud_fail(e);
        }
        jn_make_immortal(neg);
        jn_free_immortal(e->value);
        e->value = neg;
        e->num = -e->num;
        return e;
    }
    jn_node *n = node_new(p, N_NEGATE, t->position);
    if (!n) return nud_fail(e);
    n->lhs = e;
    push_anc(p, n, e);
    return n;
}

/* [a, b, x..y]: a range is only valid as an array constructor item */
static jn_node *nud_array(parser *p, token *t) {
    jn_node *n = node_new(p, N_ARRAY, t->position);
    if (!n) return NULL;
    while (!is_op(&p->tok, "]")) {
        jn_node *item = expression(p, 0);
        if (item && is_op(&p->tok, "..")) {
            int rpos = p->tok.position;
            if (!lex(p)) { jn_node_free(item); return nud_fail(n); }
            item = binary(p, OP_RANGE, item, 0, rpos);
            if (item && !(item->str = pstrdup(p, ".."))) { jn_node_free(item); return nud_fail(n); }
        }
        push_anc(p, n, item);
        if (!item || !push_item(p, n, item)) return nud_fail(n);
        if (!is_op(&p->tok, ",")) break;
        if (!lex(p)) return nud_fail(n);
    }
    return expect(p, "]") ? n : nud_fail(n);
}

static jn_node *nud_object(parser *p, token *t) {
    jn_node *n = node_new(p, N_OBJECT, t->position);
    if (!n) return NULL;
    return parse_pairs(p, n, true) ? n : nud_fail(n);
}

/* (e1; e2; ...) */
static jn_node *nud_block(parser *p, token *t) {
    jn_node *n = node_new(p, N_BLOCK, t->position);
    if (!n) return NULL;
    while (!is_op(&p->tok, ")")) {
        jn_node *e = expression(p, 0);
        push_anc(p, n, e);
        if (!e || !push_item(p, n, e)) return nud_fail(n);
        if (!is_op(&p->tok, ";")) break;
        if (!lex(p)) return nud_fail(n);
    }
    return expect(p, ")") ? n : nud_fail(n);
}

/* | pattern | update [, delete] | */
static jn_node *nud_transform(parser *p, token *t) {
    jn_node *n = node_new(p, N_TRANSFORM, t->position);
    if (!n) return NULL;
    if (!(n->lhs = expression(p, 0)) || !expect(p, "|") || !(n->rhs = expression(p, 0))) return nud_fail(n);
    if (is_op(&p->tok, ",") && (!lex(p) || !(n->third = expression(p, 0)))) return nud_fail(n);
    return expect(p, "|") ? n : nud_fail(n);
}

/* *, ** and % stand alone; and/or/in in operand position are field names */
static jn_node *nud_symbol(parser *p, token *t) {
    const char *o = t->s;
    if (!strcmp(o, "*")) return node_new(p, N_WILDCARD, t->position);
    if (!strcmp(o, "**")) return node_new(p, N_DESCENDANT, t->position);
    if (!strcmp(o, "%")) {
        jn_node *n = node_new(p, N_PARENT, t->position);
        if (!n) return NULL;
        int si = slot_new(p);
        if (si < 0) return nud_fail(n);
        n->slot = si + 1;
        return n;
    }
    jn_node *n = node_new(p, N_NAME, t->position);
    if (!n) return NULL;
    n->slen = t->len;
    n->str = take_tok_str(t);
    return as_path(p, n);
}

static jn_node *nud_prefix(parser *p, token *t) {
    static const struct {
        const char *s;
        jn_node *(*fn)(parser *p, token *t);
    } NUD[] = {{"-", nud_negate}, {"[", nud_array},   {"{", nud_object},  {"(", nud_block},    {"|", nud_transform},
               {"*", nud_symbol}, {"**", nud_symbol}, {"%", nud_symbol},  {"and", nud_symbol}, {"or", nud_symbol},
               {"in", nud_symbol}};
    for (size_t i = 0; i < sizeof NUD / sizeof NUD[0]; i++)
        if (!strcmp(t->s, NUD[i].s)) return NUD[i].fn(p, t);
    perr(p, "S0211", t->position, "The symbol %s cannot be used as a unary operator", t->s);
    return NULL;
}

static jn_node *nud(parser *p) {
    token t = p->tok;
    memset(&p->tok, 0, sizeof p->tok);
    jn_node *n = NULL;
    if (!lex(p)) {
        tok_clear(&t);
        return NULL;
    }
    switch (t.type) {
    case T_END:
        /* like the reference, an enclosing construct reports what it expected (S0203);
         * S0207 is raised at the end if nothing else went wrong */
        if (!p->end_seen) p->end_pos = t.position;
        p->end_seen = true;
        n = node_new(p, N_VALUE, t.position);
        if (n) n->value = jn_null();
        break;
    case T_NUM:
        n = node_new(p, N_NUMBER, t.position);
        if (n) {
            n->num = t.num;
            n->value = jn_number(t.num);
            if (!n->value) jn_oom(p->err);
            jn_make_immortal(n->value);
        }
        break;
    case T_STR:
        n = node_new(p, N_STRING, t.position);
        if (n) {
            n->slen = t.len;
            n->str = take_tok_str(&t);
            n->value = jn_string(n->str, n->slen);
            if (!n->value) jn_oom(p->err);
            jn_make_immortal(n->value);
        }
        break;
    case T_VALUE:
        n = node_new(p, N_VALUE, t.position);
        if (n) n->value = !strcmp(t.s, "null") ? jn_null() : jn_bool(!strcmp(t.s, "true"));
        break;
    case T_REGEX: {
        n = node_new(p, N_REGEX, t.position);
        if (!n) break;
        jn_regex *re = jn_regex_compile(t.s, t.len, t.flags, p->err);
        if (re) {
            n->value = jn_regex_value(re);
            if (!n->value) jn_oom(p->err);
            jn_make_immortal(n->value);
        }
        n->str = take_tok_str(&t);
        break;
    }
    case T_NAME:
        n = node_new(p, N_NAME, t.position);
        if (n) {
            n->slen = t.len;
            n->str = take_tok_str(&t);
            n->value = jn_string(n->str, n->slen); /* shared key for lazy lookups */
            n->khash = jn_hash_key(n->str, n->slen);
            if (!n->value) jn_oom(p->err);
            jn_make_immortal(n->value);
            n = as_path(p, n);
        }
        break;
    case T_VAR:
        n = node_new(p, N_VAR, t.position);
        if (n) {
            n->slen = t.len;
            n->str = take_tok_str(&t);
            resolve_builtin(p, n);
        }
        break;
    case T_OP: n = nud_prefix(p, &t); break;
    }
    tok_clear(&t);
    return n;
}

static const char *step_literal_type(const jn_node *s) {
    if (s->type == N_NUMBER || s->type == N_VALUE) return "literal";
    return NULL;
}

/* lhs . rhs → one path (steps merged; string literals become names). */
static jn_node *make_path(parser *p, jn_node *lhs, jn_node *rhs, int pos) {
    jn_node *path = NULL;
    if (lhs->type == N_PATH) {
        path = lhs;
    } else {
        path = node_new(p, N_PATH, pos);
        if (path && lhs->type == N_PARENT && lhs->slot) seek_add(p, path, lhs->slot - 1);
        if (!path || !push_item(p, path, lhs)) {
            if (!path) jn_node_free(lhs);
            jn_node_free(path);
            jn_node_free(rhs);
            return NULL;
        }
    }
    if (rhs->type == N_PATH) {
        for (int i = 0; i < rhs->nitems; i++) {
            if (!push_item(p, path, rhs->items[i])) {
                for (int j = i + 1; j < rhs->nitems; j++) jn_node_free(rhs->items[j]);
                rhs->nitems = 0;
                jn_node_free(rhs);
                jn_node_free(path);
                return NULL;
            }
        }
        rhs->nitems = 0;
        if (rhs->group && !path->group) { path->group = rhs->group; rhs->group = NULL; }
        jn_node_free(rhs);
    } else if (!push_item(p, path, rhs)) {
        jn_node_free(path);
        return NULL;
    }
    for (int i = 0; i < path->nitems; i++) {
        jn_node *s = path->items[i];
        if (step_literal_type(s)) {
            char buf[64];
            if (s->type == N_NUMBER) jsonata_format_double(s->num, buf, sizeof buf);
            else snprintf(buf, sizeof buf, "%s", s->value == jn_null() ? "null" : s->value->u.b ? "true" : "false");
            if (!gg_error_is_set(&p->pending)) {
                gg_error_set(&p->pending, "S0213", "The literal value %s cannot be used as a step within a path expression", buf);
                p->pending.position = s->position;
                gg_error_set_path(&p->pending, buf);
            }
        }
        if (s->type == N_STRING) { /* value stays: the key string */
            s->type = N_NAME;
            s->khash = jn_hash_key(s->str, s->slen);
        }
        if (s->keep_array) path->keep_array = true;
    }
    if (path->nitems > 0 && path->items[0]->type == N_ARRAY) path->items[0]->cons_array = true;
    if (path->nitems > 0 && path->items[path->nitems - 1]->type == N_ARRAY)
        path->items[path->nitems - 1]->cons_array = true;
    resolve_ancestry(p, path);
    if (gg_error_is_set(p->err)) {
        jn_node_free(path);
        return NULL;
    }
    return path;
}

static jn_node *last_step(jn_node *n) {
    return (n->type == N_PATH && n->nitems > 0) ? n->items[n->nitems - 1] : n;
}

/* Mark calls in tail position of a lambda body. */
static void mark_tail(jn_node *n) {
    if (!n || n->nstages || n->group) return;
    if (n->type == N_CALL) n->thunk = true;
    else if (n->type == N_CONDITION) {
        mark_tail(n->rhs);
        mark_tail(n->third);
    } else if (n->type == N_BLOCK && n->nitems > 0) {
        mark_tail(n->items[n->nitems - 1]);
    }
}

static jn_node *parse_lambda(parser *p, jn_node *call, int pos) {
    /* call->items are the parameter expressions; each must be a variable */
    jn_node *lam = node_new(p, N_LAMBDA, pos);
    if (!lam) {
        jn_node_free(call);
        return NULL;
    }
    for (int i = 0; i < call->nitems; i++) {
        const jn_node *a = call->items[i];
        if (a->type != N_VAR || a->focus || a->index || a->nstages || a->group || a->keep_array) {
            perr(p, "S0208", call->items[i]->position,
                 "Parameter %s of function definition must be a variable name (start with $)", NULL);
            jn_node_free(call);
            jn_node_free(lam);
            return NULL;
        }
    }
    lam->items = call->items;
    lam->nitems = call->nitems;
    call->items = NULL;
    call->nitems = 0;
    jn_node_free(call);
    if (is_op(&p->tok, "<")) {
        /* signature: raw text up to the matching '>' */
        size_t start = p->tok.start, i = start;
        int depth = 0;
        for (; i < p->len; i++) {
            if (p->src[i] == '<') depth++;
            else if (p->src[i] == '>' && --depth == 0) break;
        }
        if (i >= p->len) {
            perr(p, "S0401", (int)i, "Signature not terminated", NULL);
            jn_node_free(lam);
            return NULL;
        }
        char *sig = strndup(p->src + start, i + 1 - start);
        if (!sig) { jn_oom(p->err); jn_node_free(lam); return NULL; }
        lam->sig = jn_sig_parse(sig, p->err);
        free(sig);
        if (!lam->sig) {
            if (p->err->position < 0) p->err->position = (int)start;
            jn_node_free(lam);
            return NULL;
        }
        p->pos = i + 1;
        p->prev_operand = true;
        if (!lex(p)) { jn_node_free(lam); return NULL; }
    }
    if (!expect(p, "{")) { jn_node_free(lam); return NULL; }
    lam->lhs = expression(p, 0);
    if (!lam->lhs || !expect(p, "}")) { jn_node_free(lam); return NULL; }
    mark_tail(lam->lhs);
    return lam;
}

/* Literals, and arrays/arithmetic/ranges of literals, evaluate to the same value anywhere. */
static bool is_constant(const jn_node *n) {
    if (!n || n->nstages || n->group || n->keep_array) return false;
    switch (n->type) {
    case N_NUMBER: case N_STRING: case N_VALUE: return true;
    case N_NEGATE: return is_constant(n->lhs);
    case N_BINARY:
        return n->op != OP_AND && n->op != OP_OR && is_constant(n->lhs) && is_constant(n->rhs);
    case N_ARRAY:
        for (int i = 0; i < n->nitems; i++)
            if (!is_constant(n->items[i])) return false;
        return true;
    default: return false;
    }
}

static jn_node *binary(parser *p, jn_op op, jn_node *lhs, int bp, int pos) {
    jn_node *rhs = expression(p, bp);
    if (!rhs) {
        jn_node_free(lhs);
        return NULL;
    }
    jn_node *n = node_new(p, N_BINARY, pos);
    if (!n) {
        jn_node_free(lhs);
        jn_node_free(rhs);
        return NULL;
    }
    n->op = op;
    n->lhs = lhs;
    n->rhs = rhs;
    push_anc(p, n, lhs);
    push_anc(p, n, rhs);
    return n;
}


/* ---- infix operators (led): one function each, found by the operator's text. Each takes
 * ownership of `left` and, failing, frees it and whatever it built, and returns NULL. ---- */
typedef jn_node *(*led_fn)(parser *p, jn_node *left, const char *o, int bp, int pos);

static jn_node *led_fail(jn_node *left, jn_node *n) {
    jn_node_free(left);
    jn_node_free(n);
    return NULL;
}

static jn_node *led_path(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    jn_node *rhs = expression(p, 75);
    if (!rhs) return led_fail(left, NULL);
    return make_path(p, left, rhs, pos);
}

/* step[] keeps a singleton array; step[expr] is a filter stage of the last step */
static jn_node *led_predicate(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    if (is_op(&p->tok, "]")) {
        if (!lex(p)) return led_fail(left, NULL);
        last_step(left)->keep_array = true;
        left->keep_array = true;
        return left;
    }
    jn_node *e = expression(p, 0);
    if (!e) return led_fail(left, NULL);
    if (!expect(p, "]")) return led_fail(left, e);
    e->constant = e->type != N_NUMBER && is_constant(e);
    jn_node *s = last_step(left);
    if (s->group || (left->type == N_PATH && left->group)) {
        perr(p, "S0209", pos, "A predicate cannot follow a grouping expression in a step", NULL);
        return led_fail(left, e);
    }
    int ne = e->nseek + 1;
    for (int k = 0; k < ne; k++) {
        int si = k < e->nseek ? e->seek[k] : (e->type == N_PARENT && e->slot ? e->slot - 1 : -1);
        if (si < 0 || p->slots[si].level <= 0) continue;
        if (p->slots[si].level == 1) seek_parent(p, s, si);
        else p->slots[si].level--;
    }
    push_anc(p, s, e);
    if (gg_error_is_set(p->err)) return led_fail(left, e);
    if (!push_stage(p, s, 0, e, NULL, pos)) return led_fail(left, NULL);
    return left;
}

/* step{key: value, ...}: the grouping of a step */
static jn_node *led_group(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    if (left->group) {
        perr(p, "S0210", pos, "Each step can only have one grouping expression", NULL);
        return led_fail(left, NULL);
    }
    jn_node *g = node_new(p, N_OBJECT, pos);
    if (!g) return led_fail(left, NULL);
    left->group = g;
    if (!parse_pairs(p, g, false)) return led_fail(left, NULL);
    return left;
}

/* $formatNumber(x, "#,##0.00"): a literal picture is analysed here, once, rather than at
 * every call; the native uses the analysis when the picture it receives is this literal
 * (jn_fn_format_number). Any string literal argument qualifies (the picture is the first
 * one when the number comes from the context); one that is no valid picture gets none,
 * and the call raises its error as before. */
static void analyse_pictures(parser *p, jn_node *call) {
    const jn_node *f = call->lhs;
    if (f->type != N_VAR || !f->builtin || strcmp(f->builtin->name, "formatNumber") != 0) return;
    for (int i = 0; i < call->nitems; i++) {
        jn_value *v = call->items[i]->value;
        if (call->items[i]->type == N_STRING && v && v->type == JN_STRING && !v->u.str.numfmt &&
            !jn_numfmt_compile(v->u.str.s, &v->u.str.numfmt)) {
            jn_oom(p->err);
            return;
        }
    }
}

/* f(args) — a call, a partial application (some argument is ?), or a lambda definition
 * when f is `function` or λ */
static jn_node *led_call(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    jn_node *call = node_new(p, N_CALL, pos);
    if (!call) return led_fail(left, NULL);
    bool partial = false;
    if (!is_op(&p->tok, ")")) {
        for (;;) {
            jn_node *a;
            if (is_op(&p->tok, "?")) { /* partial application placeholder */
                a = node_new(p, N_PLACEHOLDER, p->tok.position);
                if (!a || !lex(p)) { jn_node_free(a); return led_fail(left, call); }
            } else {
                a = expression(p, 0);
            }
            push_anc(p, call, a);
            if (!a || !push_item(p, call, a)) return led_fail(left, call);
            if (a->type == N_PLACEHOLDER) partial = true;
            if (!is_op(&p->tok, ",")) break;
            if (!lex(p)) return led_fail(left, call);
        }
    }
    if (!expect(p, ")")) return led_fail(left, call);
    if (left->type == N_PATH && left->nitems == 1 && left->items[0]->type == N_NAME && !left->items[0]->nstages &&
        (!strcmp(left->items[0]->str, "function") || !strcmp(left->items[0]->str, "\xCE\xBB"))) {
        jn_node_free(left);
        return parse_lambda(p, call, pos);
    }
    call->type = partial ? N_PARTIAL : N_CALL;
    call->lhs = left;
    if (!partial) analyse_pictures(p, call);
    return call;
}

/* step@$v binds the context item, step#$i its position: both make the path a tuple stream */
static jn_node *led_bind_step(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)bp;
    jn_node *v = expression(p, 80);
    if (!v) return led_fail(left, NULL);
    if (v->type != N_VAR) {
        perr(p, "S0214", pos, "The right side of %s must be a variable name (start with $)", o);
        return led_fail(left, v);
    }
    if (left->type != N_PATH && o[0] == '#') { /* '@' leaves a lone expression as is */
        left = as_path(p, left);
        if (!left) return led_fail(NULL, v);
    }
    jn_node *s = last_step(left);
    if (o[0] == '@') {
        if (s->nstages) {
            perr(p, "S0215", pos, "A context variable binding must precede any predicates on a step", NULL);
            return led_fail(left, v);
        }
        if (s->type == N_SORT) {
            perr(p, "S0216", pos, "A context variable binding must precede the 'order-by' clause on a step", NULL);
            return led_fail(left, v);
        }
        free(s->focus);
        if (!(s->focus = pstrdup(p, v->str))) return led_fail(left, v);
    } else if (s->nstages == 0 && !s->index) {
        if (!(s->index = pstrdup(p, v->str))) return led_fail(left, v);
    } else if (!push_stage(p, s, 1, NULL, v->str, pos)) {
        return led_fail(left, v);
    }
    s->tuple = true;
    jn_node_free(v);
    return left;
}

/* path^(<key, >key, ...): an order-by step */
static jn_node *led_sort(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    if (!expect(p, "(")) return led_fail(left, NULL);
    jn_node *sort = node_new(p, N_SORT, pos);
    if (!sort) return led_fail(left, NULL);
    for (;;) {
        bool desc = is_op(&p->tok, ">");
        if ((desc || is_op(&p->tok, "<")) && !lex(p)) return led_fail(left, sort);
        jn_node *e = expression(p, 0);
        if (!e) return led_fail(left, sort);
        push_anc(p, sort, e);
        jn_sortterm *nt = realloc(sort->terms, (size_t)(sort->nterms + 1) * sizeof *nt);
        if (!nt) {
            jn_oom(p->err);
            jn_node_free(e);
            return led_fail(left, sort);
        }
        sort->terms = nt;
        sort->terms[sort->nterms].expr = e;
        sort->terms[sort->nterms].desc = desc;
        sort->nterms++;
        if (!is_op(&p->tok, ",")) break;
        if (!lex(p)) return led_fail(left, sort);
    }
    if (!expect(p, ")")) return led_fail(left, sort);
    jn_node *path = as_path(p, left);
    if (!path) return led_fail(NULL, sort);
    if (!push_item(p, path, sort)) return led_fail(path, NULL);
    resolve_ancestry(p, path);
    if (gg_error_is_set(p->err)) return led_fail(path, NULL);
    return path;
}

/* cond ? then [: else] */
static jn_node *led_condition(parser *p, jn_node *left, const char *o, int bp, int pos) {
    (void)o, (void)bp;
    jn_node *n = node_new(p, N_CONDITION, pos);
    if (!n) return led_fail(left, NULL);
    n->lhs = left;
    if (!(n->rhs = expression(p, 0))) return led_fail(NULL, n);
    if (is_op(&p->tok, ":")) {
        if (!lex(p) || !(n->third = expression(p, 0))) return led_fail(NULL, n);
    }
    push_anc(p, n, n->lhs);
    push_anc(p, n, n->rhs);
    push_anc(p, n, n->third);
    return n;
}

/* the operators whose node keeps both sides: ?: and ?? (right side at bp), ~> (at bp),
 * := (right associative: bp - 1, and only after a variable) */
static jn_node *led_pair(parser *p, jn_node *left, const char *o, int bp, int pos) {
    bool bind = !strcmp(o, ":=");
    if (bind && (left->type != N_VAR || left->nstages)) {
        perr(p, "S0212", pos, "The left side of := must be a variable name (start with $)", NULL);
        return led_fail(left, NULL);
    }
    jn_ntype type = bind ? N_BIND : !strcmp(o, "~>") ? N_APPLY : o[1] == ':' ? N_ELVIS : N_COALESCE;
    jn_node *n = node_new(p, type, pos);
    if (!n) return led_fail(left, NULL);
    n->lhs = left;
    if (!(n->rhs = expression(p, bind ? bp - 1 : bp))) return led_fail(NULL, n);
    if (!bind) push_anc(p, n, n->lhs);
    push_anc(p, n, n->rhs);
    return n;
}

static const struct {
    const char *s;
    led_fn fn; /* NULL: a binary operator node of `op` */
    jn_op op;
} LED[] = {
    {".", led_path, 0},        {"[", led_predicate, 0},  {"{", led_group, 0},      {"(", led_call, 0},
    {"@", led_bind_step, 0},   {"#", led_bind_step, 0},  {"^", led_sort, 0},       {"?", led_condition, 0},
    {"?:", led_pair, 0},       {"??", led_pair, 0},      {":=", led_pair, 0},      {"~>", led_pair, 0},
    {"+", NULL, OP_ADD},       {"-", NULL, OP_SUB},      {"*", NULL, OP_MUL},      {"/", NULL, OP_DIV},
    {"%", NULL, OP_MOD},       {"=", NULL, OP_EQ},       {"!=", NULL, OP_NE},      {"<", NULL, OP_LT},
    {"<=", NULL, OP_LE},       {">", NULL, OP_GT},       {">=", NULL, OP_GE},      {"and", NULL, OP_AND},
    {"or", NULL, OP_OR},       {"&", NULL, OP_CONCAT},   {"..", NULL, OP_RANGE},   {"in", NULL, OP_IN},
};

static jn_node *led_dispatch(parser *p, jn_node *left, const char *o, int bp, int pos) {
    for (size_t i = 0; i < sizeof LED / sizeof LED[0]; i++) {
        if (strcmp(o, LED[i].s) != 0) continue;
        if (LED[i].fn) return LED[i].fn(p, left, o, bp, pos);
        jn_node *n = binary(p, LED[i].op, left, bp, pos);
        if (n && !(n->str = pstrdup(p, o))) return led_fail(NULL, n);
        return n;
    }
    perr(p, "S0204", pos, "Unknown operator: %s", o);
    return led_fail(left, NULL);
}

static jn_node *led(parser *p, jn_node *left) {
    token t = p->tok;
    memset(&p->tok, 0, sizeof p->tok);
    jn_node *n = NULL;
    if (!lex(p)) n = led_fail(left, NULL);
    else if (t.type != T_OP) {
        perr(p, "S0201", t.position, "Syntax error: %s", t.s);
        n = led_fail(left, NULL);
    } else {
        n = led_dispatch(p, left, t.s, lbp_of(&t), t.position);
    }
    tok_clear(&t);
    return n;
}

static jn_node *expression(parser *p, int rbp) {
    if (gg_error_is_set(p->err)) return NULL;
    if (++p->depth > MAX_PARSE_DEPTH) {
        /* the reference would overflow its stack here; we report the depth guard */
        perr(p, "D1011", p->tok.position, "Expression nested too deeply (more than 500 levels)", NULL);
        p->depth--;
        return NULL;
    }
    /* nesting of this expression = its own operator count + the deepest inner expression
     * (nodes of inner expressions never hold nodes of outer ones, so this bounds the AST
     * height from above) */
    int outer_max = p->nest_max, chain = 1;
    p->nest_max = 0;
    jn_node *left = nud(p);
    while (left && rbp < lbp_of(&p->tok) && !gg_error_is_set(p->err)) {
        if (++chain + p->nest_max > MAX_NESTING) {
            perr(p, "D1011", p->tok.position,
                 "Expression nested too deeply (more than 1000 levels, counting operator chains)", NULL);
            break;
        }
        left = led(p, left);
    }
    if (chain + p->nest_max > MAX_NESTING && !gg_error_is_set(p->err))
        perr(p, "D1011", p->tok.position,
             "Expression nested too deeply (more than 1000 levels, counting operator chains)", NULL);
    p->nest_max = outer_max > chain + p->nest_max ? outer_max : chain + p->nest_max;
    p->depth--;
    if (gg_error_is_set(p->err)) {
        jn_node_free(left);
        return NULL;
    }
    return left;
}

jn_node *jn_parse(const char *src, const jsonata_env *env, gg_error *err) {
    parser p;
    memset(&p, 0, sizeof p);
    p.pending.position = -1;
    p.src = src;
    p.len = strlen(src);
    p.env = env;
    p.err = err;
    if (!lex(&p)) {
        tok_clear(&p.tok);
        return NULL;
    }
    jn_node *n = expression(&p, 0);
    if (n && p.tok.type != T_END) {
        perr(&p, "S0201", p.tok.position, "Syntax error: %s", p.tok.s);
        jn_node_free(n);
        n = NULL;
    }
    if (n && p.end_seen) {
        perr(&p, "S0207", p.end_pos, "Unexpected end of expression", NULL);
        jn_node_free(n);
        n = NULL;
    }
    if (n && gg_error_is_set(&p.pending)) {
        gg_error_move(err, &p.pending);
        jn_node_free(n);
        n = NULL;
    }
    gg_error_clear(&p.pending);
    if (n) {
        bool unresolved = n->type == N_PARENT;
        for (int i = 0; i < n->nseek; i++)
            if (p.slots[n->seek[i]].level > 0) unresolved = true;
        if (unresolved) {
            perr(&p, "S0217", n->position, "The object representing the 'parent' cannot be derived from this expression", n->type == N_PARENT ? "parent" : "path");
            jn_node_free(n);
            n = NULL;
        } else {
            assign_labels(&p, n);
            if (gg_error_is_set(err)) {
                jn_node_free(n);
                n = NULL;
            }
        }
    }
    free(p.slots);
    tok_clear(&p.tok);
    return n;
}
