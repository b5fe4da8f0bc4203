/* eval.c — the JSONata evaluator: sequences and flattening, paths with tuple streams
 * (focus @, index #, parent %), predicates, group-by, order-by, operators, lambdas with
 * closures, partial application, trampolined tail calls, transforms, and the limits
 * (depth, time, sequence length, cancellation). The AST is only read, never changed. */
#include "jsonata/core.h"
#include "util/regex.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_DEPTH 10000
#define DEFAULT_MAX_SEQ 10000000L
#define DEFAULT_MAX_STACK (4L << 20)
#define DEFAULT_MAX_MEMORY (1L << 30)

typedef struct jn_binding {
    const char *name;
    jn_value *v;
} jn_binding;

struct jn_frame {
    jn_frame *parent;
    jn_frame *next_alloc;
    jn_frame *next_free;
    bool captured; /* reachable from a closure: lives until the evaluation ends */
    jn_binding *b;
    int n, cap;
    jn_binding inline_b[2];
};

typedef struct jn_keep {
    struct jn_keep *next;
    jsonata_expr *expr;
} jn_keep;

struct jn_state {
    const jsonata_env *env;
    gg_error *err;
    int depth, max_depth;
    const char *stack_base; /* address of a local at evaluation start */
    long max_stack;
    long max_seq;
    double start_ms;
    int time_limit;
    const atomic_int *cancel;
    unsigned ticks;
    long long ts;
    void *call_user;
    jn_frame *frames;
    jn_frame *free_frames; /* released frames for reuse */
    jn_keep *keep;
};


#define FAILED(c) ((c)->err->code[0] != '\0')

static jn_value *ev(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env);
static jn_value *ev_ex(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env, bool as_step);
static jn_value *apply_fn(jn_state *c, jn_value *fn, jn_value **args, int nargs, jn_value *input,
                          jn_frame *env, int position, const char *name);

/* ---- errors ---- */
static jn_value *fail(jn_state *c, int pos, const char *token, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static jn_value *fail(jn_state *c, int pos, const char *token, const char *code, const char *fmt, ...) {
    if (FAILED(c)) return NULL;
    va_list ap;
    va_start(ap, fmt);
    gg_error_vset(c->err, code, fmt, ap);
    va_end(ap);
    c->err->position = pos;
    if (token) gg_error_set_path(c->err, token);
    return NULL;
}

static jn_value *oom(jn_state *c) {
    if (!FAILED(c)) jn_oom(c->err);
    return NULL;
}

void jn_error(jn_call *call, gg_error *err, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gg_error_vset(err, code, fmt, ap);
    va_end(ap);
    if (call) err->position = call->position;
}

/* ---- frames ---- */
static jn_frame *frame_new(jn_state *c, jn_frame *parent) {
    jn_frame *f = c->free_frames;
    if (f) {
        c->free_frames = f->next_free;
        f->parent = parent;
        f->next_free = NULL;
        return f;
    }
    f = calloc(1, sizeof *f);
    if (!f) {
        oom(c);
        return NULL;
    }
    f->parent = parent;
    f->b = f->inline_b;
    f->cap = 2;
    f->next_alloc = c->frames;
    c->frames = f;
    return f;
}

/* Give a frame back for reuse unless a closure captured it. */
static void frame_release(jn_state *c, jn_frame *f) {
    if (!f || f->captured) return;
    for (int i = 0; i < f->n; i++) jn_decref(f->b[i].v);
    f->n = 0;
    f->parent = NULL;
    f->next_free = c->free_frames;
    c->free_frames = f;
}

static void frame_capture(jn_frame *f) {
    for (; f && !f->captured; f = f->parent) f->captured = true;
}

static bool frame_bind(jn_state *c, jn_frame *f, const char *name, jn_value *v /* owned */) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->b[i].name, name)) {
            jn_decref(f->b[i].v);
            f->b[i].v = v;
            return true;
        }
    if (f->n == f->cap) {
        int nc = f->cap * 2;
        jn_binding *nb = malloc((size_t)nc * sizeof *nb);
        if (!nb) {
            jn_decref(v);
            oom(c);
            return false;
        }
        memcpy(nb, f->b, (size_t)f->n * sizeof *nb);
        if (f->b != f->inline_b) free(f->b);
        f->b = nb;
        f->cap = nc;
    }
    f->b[f->n].name = name;
    f->b[f->n].v = v;
    f->n++;
    return true;
}

static bool frame_lookup(jn_frame *f, const char *name, jn_value **out) {
    /* most names differ from most bindings at their first byte: a builtin's ("number")
     * from the input's ("$") that every root scope holds */
    for (; f; f = f->parent)
        for (int i = f->n - 1; i >= 0; i--)
            if (f->b[i].name[0] == name[0] && !strcmp(f->b[i].name, name)) {
                *out = f->b[i].v;
                return true;
            }
    return false;
}

static void frames_free(jn_state *c) {
    jn_frame *f = c->frames;
    while (f) {
        jn_frame *nx = f->next_alloc;
        for (int i = 0; i < f->n; i++) jn_decref(f->b[i].v);
        if (f->b != f->inline_b) free(f->b);
        free(f);
        f = nx;
    }
    c->frames = NULL;
}

/* ---- limits ---- */
static bool check_limits(jn_state *c) {
    if (c->cancel && atomic_load_explicit(c->cancel, memory_order_relaxed)) {
        fail(c, -1, NULL, "D1013", "Evaluation cancelled");
        return false;
    }
    if (c->time_limit > 0 && gg_now_ms() - c->start_ms > c->time_limit) {
        fail(c, -1, NULL, "D1012", "Expression evaluation timeout: Check for infinite loop");
        return false;
    }
    if (jn_tl_budget && jn_tl_budget->exceeded) { /* jsonata_evaluate reports D1014 */
        fail(c, -1, NULL, "D1014", "Evaluation exceeded its memory budget");
        return false;
    }
    return true;
}

bool jn_check_limits(jn_call *call, gg_error *err) {
    (void)err;
    return check_limits(call->st);
}
long jn_max_sequence(const jn_call *call) { return call->st->max_seq; }
long long jn_now_ms(const jn_call *call) {
    if (!call->st->ts) call->st->ts = gg_wall_ms(); /* taken once per evaluation */
    return call->st->ts;
}
void *jn_call_user(const jn_call *call) { return call->st->call_user; }

/* ---- sequence helpers ---- */
static jn_value *seq_new(jn_state *c) {
    jn_value *s = jn_seq_new(4);
    if (!s) oom(c);
    return s;
}

static bool seq_push(jn_state *c, jn_value *seq, jn_value *v) {
    if ((long)seq->u.arr.n >= c->max_seq) {
        jn_decref(v);
        fail(c, -1, NULL, "D2014", "The size of the sequence exceeds the maximum allowed");
        return false;
    }
    if (!jn_array_push(seq, v)) {
        oom(c);
        return false;
    }
    return true;
}

/* the reference's append(): arrays concatenate, single values are pushed */
static jn_value *append(jn_state *c, jn_value *a /* owned */, jn_value *b /* owned */) {
    if (!a) return b;
    if (!b) return a;
    if (a->type != JN_ARRAY) {
        jn_value *s = seq_new(c);
        if (!s || !seq_push(c, s, a)) {
            jn_decref(b);
            jn_decref(s);
            return NULL;
        }
        a = s;
    } else if (a->rc != 1) {
        jn_value *cp = jn_array_copy(a, 0);
        jn_decref(a);
        if (!cp) {
            jn_decref(b);
            return oom(c);
        }
        a = cp;
    }
    if (b->type == JN_ARRAY) {
        for (size_t i = 0; i < b->u.arr.n; i++)
            if (!seq_push(c, a, jn_incref(b->u.arr.items[i]))) {
                jn_decref(a);
                jn_decref(b);
                return NULL;
            }
        jn_decref(b);
    } else if (!seq_push(c, a, b)) {
        jn_decref(a);
        return NULL;
    }
    return a;
}

static bool flatten_into(jn_state *c, jn_value *v, jn_value *out) {
    if (v && v->type == JN_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++)
            if (!flatten_into(c, v->u.arr.items[i], out)) return false;
        return true;
    }
    return seq_push(c, out, jn_incref(v));
}

/* Collapse a sequence result the way the reference's evaluate() does. */
static inline jn_value *collapse(const jn_node *n, jn_value *r) {
    /* in line: most results are no sequence (jn_is_sequence's test, without its call) */
    if (!r || r->type != JN_ARRAY || (r->flags & (JN_F_SEQUENCE | JN_F_TUPLE)) != JN_F_SEQUENCE) return r;
    if (n->keep_array && r->rc >= 0) r->flags |= JN_F_KEEP;
    if (r->u.arr.n == 0) {
        jn_decref(r);
        return NULL;
    }
    if (r->u.arr.n == 1 && !(r->flags & JN_F_KEEP)) {
        jn_value *x = jn_incref(r->u.arr.items[0]);
        jn_decref(r);
        return x;
    }
    return r;
}

static bool is_number(const jn_value *v) { return v && v->type == JN_NUMBER; }

/* ---- tuples ----
 * A tuple is an object value: key "@" holds the context, other keys are variable names
 * bound by focus (@$v), index (#$i) and parent labels. */
static jn_value *tuple_ctx(const jn_value *t) { return jn_object_get(t, "@", 1); }

static jn_frame *frame_from_tuple(jn_state *c, jn_frame *env, const jn_value *t) {
    jn_frame *f = frame_new(c, env);
    if (!f) return NULL;
    for (size_t i = 0; i < t->u.obj.n; i++) {
        const jn_value *k = t->u.obj.ents[i].key;
        if (k->u.str.len == 1 && k->u.str.s[0] == '@') continue;
        if (!frame_bind(c, f, k->u.str.s, jn_incref(t->u.obj.ents[i].val))) return NULL;
    }
    /* keep the tuple alive as long as the frame: names point into its keys */
    if (!frame_bind(c, f, "\x01tuple", jn_incref((jn_value *)t))) return NULL;
    return f;
}

static jn_value *tuple_copy(jn_state *c, const jn_value *t) {
    jn_value *o = jn_object_new(t ? t->u.obj.n + 2 : 2);
    if (!o) return oom(c);
    if (t)
        for (size_t i = 0; i < t->u.obj.n; i++)
            if (!jn_object_set_key(o, t->u.obj.ents[i].key, jn_incref(t->u.obj.ents[i].val))) {
                jn_decref(o);
                return oom(c);
            }
    return o;
}

static bool tuple_set(jn_state *c, jn_value *t, const char *k, jn_value *v) {
    if (!jn_object_set(t, k, strlen(k), v)) {
        oom(c);
        return false;
    }
    return true;
}

/* ---- boolean / string casts ---- */
static jn_value *to_string(jn_state *c, jn_value *v, int pos) {
    gg_error e = GG_ERROR_INIT;
    jn_value *s = jn_to_string(NULL, v, false, &e);
    if (gg_error_is_set(&e)) {
        e.position = pos;
        gg_error_move(c->err, &e);
        return NULL;
    }
    return s;
}

/* ---- name, wildcard, descendants ---- */
static bool lookup_into(jn_state *c, jn_value *in, const jn_node *n, jn_value **acc) {
    if (!in) return true;
    if (in->type == JN_ARRAY) {
        for (size_t i = 0; i < in->u.arr.n; i++) {
            jn_value *sub = NULL;
            if (!lookup_into(c, in->u.arr.items[i], n, &sub)) return false;
            if (!sub) continue;
            if (!*acc && !(*acc = seq_new(c))) {
                jn_decref(sub);
                return false;
            }
            if ((*acc)->type != JN_ARRAY || !jn_is_sequence(*acc)) {
                jn_value *s = seq_new(c);
                if (!s || !seq_push(c, s, *acc)) {
                    jn_decref(sub);
                    return false;
                }
                *acc = s;
            }
            if (sub->type == JN_ARRAY) {
                for (size_t j = 0; j < sub->u.arr.n; j++)
                    if (!seq_push(c, *acc, jn_incref(sub->u.arr.items[j]))) {
                        jn_decref(sub);
                        return false;
                    }
                jn_decref(sub);
            } else if (!seq_push(c, *acc, sub)) {
                return false;
            }
        }
        if (!*acc) *acc = seq_new(c);
        return *acc != NULL;
    }
    if (in->type == JN_OBJECT)
        *acc = jn_incref(n->value ? jn_object_get_key(in, n->value, n->khash) : jn_object_get(in, n->str, n->slen));
    return true;
}

static jn_value *eval_name(jn_state *c, const jn_node *n, jn_value *input) {
    jn_value *acc = NULL;
    if (!lookup_into(c, input, n, &acc)) {
        jn_decref(acc);
        return NULL;
    }
    return acc;
}

static jn_value *eval_wildcard(jn_state *c, jn_value *input) {
    jn_value *res = seq_new(c);
    if (!res) return NULL;
    if (input && input->type == JN_ARRAY && (input->flags & JN_F_OUTER) && input->u.arr.n > 0)
        input = input->u.arr.items[0];
    if (input && input->type == JN_ARRAY) {
        if (!flatten_into(c, input, res)) goto bad;
    } else if (input && input->type == JN_OBJECT) {
        if (!jn_force(input)) {
            oom(c);
            goto bad;
        }
        for (size_t i = 0; i < input->u.obj.n; i++) {
            jn_value *v = input->u.obj.ents[i].val;
            if (v && v->type == JN_ARRAY) {
                if (!flatten_into(c, v, res)) goto bad;
            } else if (!seq_push(c, res, jn_incref(v))) {
                goto bad;
            }
        }
    }
    return res;
bad:
    jn_decref(res);
    return NULL;
}

static bool descend(jn_state *c, jn_value *in, jn_value *out, int depth) {
    if (depth > 5000) {
        fail(c, -1, NULL, "D1011", "Stack overflow");
        return false;
    }
    if (!in) return true;
    if (in->type != JN_ARRAY && !seq_push(c, out, jn_incref(in))) return false;
    if (in->type == JN_ARRAY) {
        for (size_t i = 0; i < in->u.arr.n; i++)
            if (!descend(c, in->u.arr.items[i], out, depth + 1)) return false;
    } else if (in->type == JN_OBJECT) {
        if (!jn_force(in)) {
            oom(c);
            return false;
        }
        for (size_t i = 0; i < in->u.obj.n; i++)
            if (!descend(c, in->u.obj.ents[i].val, out, depth + 1)) return false;
    }
    return true;
}

static jn_value *eval_descendants(jn_state *c, jn_value *input) {
    jn_value *res = seq_new(c);
    if (!res) return NULL;
    if (input && !descend(c, input, res, 0)) {
        jn_decref(res);
        return NULL;
    }
    if (res->u.arr.n == 1) {
        jn_value *x = jn_incref(res->u.arr.items[0]);
        jn_decref(res);
        return x;
    }
    return res;
}

/* ---- predicates ---- */
/* A predicate value that selects by position: a number other than NaN (the reference's
 * isNumeric; NaN falls through to the boolean cast, which makes it false). */
static inline bool is_index(const jn_value *v) { return is_number(v) && !isnan(v->u.n); }

/* A value about to be cast to boolean (condition, and/or, predicate): an infinite number
 * in it is D1001, as in the reference, whose boolean() checks every number it meets. On
 * failure the value is released and false returned. */
static bool finite_truth(jn_state *c, jn_value *v, const jn_node *at) {
    if (!jn_truth_meets_infinity(v)) return true;
    jn_decref(v);
    fail(c, at->position, at->str, "D1001", "Number out of range");
    return false;
}

static jn_value *eval_filter(jn_state *c, const jn_node *pred, jn_value *input /* owned */,
                             jn_frame *env) {
    jn_value *res = seq_new(c);
    if (!res) {
        jn_decref(input);
        return NULL;
    }
    bool tuples = input && (input->flags & JN_F_TUPLE) && input->type == JN_ARRAY;
    if (tuples) res->flags |= JN_F_TUPLE;
    if (!input) {
        /* the reference still evaluates the predicate once (against undefined), so its
         * errors surface; an undefined item never makes it into the result */
        if (pred->type != N_NUMBER) {
            jn_value *r = ev(c, pred, NULL, env);
            jn_decref(r);
            if (FAILED(c)) goto bad;
        }
        return res;
    } else if (input->type != JN_ARRAY) {
        jn_value *s = seq_new(c);
        if (!s || !seq_push(c, s, input)) {
            input = NULL;
            goto bad;
        }
        input = s;
    }
    size_t len = input->u.arr.n;
    if (pred->type == N_NUMBER) {
        double idx = floor(pred->num);
        if (idx < 0) idx += (double)len;
        if (idx >= 0 && idx < (double)len) {
            jn_value *item = input->u.arr.items[(size_t)idx];
            if (item && item->type == JN_ARRAY) {
                jn_decref(res);
                res = jn_incref(item);
            } else if (item && !seq_push(c, res, jn_incref(item))) {
                goto bad;
            }
        }
        jn_decref(input);
        return res;
    }
    if (pred->constant && len > 0) {
        /* a predicate that does not depend on the item (e.g. [[0..9]]) is evaluated once */
        jn_value *r = ev(c, pred, NULL, env);
        if (FAILED(c) || !finite_truth(c, r, pred)) goto bad;
        bool allnum = r && (is_index(r) || r->type == JN_ARRAY);
        for (size_t j = 0; allnum && r->type == JN_ARRAY && j < r->u.arr.n; j++)
            if (!is_index(r->u.arr.items[j])) allnum = false;
        if (allnum && r->type == JN_ARRAY && r->u.arr.n == 0) allnum = false;
        if (!allnum) {
            bool t = jn_truthy(r);
            jn_decref(r);
            for (size_t i = 0; t && i < len; i++)
                if (!seq_push(c, res, jn_incref(input->u.arr.items[i]))) goto bad;
            jn_decref(input);
            return res;
        }
        uint32_t *hits = len ? calloc(len, sizeof *hits) : NULL;
        if (len && !hits) {
            jn_decref(r);
            oom(c);
            goto bad;
        }
        size_t m = r->type == JN_ARRAY ? r->u.arr.n : 1;
        for (size_t j = 0; j < m; j++) {
            double ii = floor(r->type == JN_ARRAY ? r->u.arr.items[j]->u.n : r->u.n);
            if (ii < 0) ii += (double)len;
            if (ii >= 0 && ii < (double)len) hits[(size_t)ii]++;
        }
        jn_decref(r);
        for (size_t i = 0; i < len; i++)
            for (uint32_t k = 0; k < hits[i]; k++)
                if (!seq_push(c, res, jn_incref(input->u.arr.items[i]))) {
                    free(hits);
                    goto bad;
                }
        free(hits);
        jn_decref(input);
        return res;
    }
    for (size_t i = 0; i < len; i++) {
        jn_value *item = input->u.arr.items[i];
        jn_value *ctx = item;
        jn_frame *fenv = env;
        if (tuples) {
            ctx = tuple_ctx(item);
            fenv = frame_from_tuple(c, env, item);
            if (!fenv) goto bad;
        }
        jn_value *r = ev(c, pred, ctx, fenv);
        if (FAILED(c) || !finite_truth(c, r, pred)) goto bad;
        size_t keep = 0; /* the reference adds an item once per matching index */
        if (is_number(r)) {
            double ii = floor(r->u.n);
            if (ii < 0) ii += (double)len;
            keep = ii == (double)i;
        } else if (r && r->type == JN_ARRAY && r->u.arr.n > 0) {
            bool allnum = true;
            for (size_t j = 0; j < r->u.arr.n; j++)
                if (!is_index(r->u.arr.items[j])) allnum = false;
            if (allnum) {
                for (size_t j = 0; j < r->u.arr.n; j++) {
                    double ii = floor(r->u.arr.items[j]->u.n);
                    if (ii < 0) ii += (double)len;
                    if (ii == (double)i) keep++;
                }
            } else {
                keep = jn_truthy(r);
            }
        } else {
            keep = jn_truthy(r);
        }
        jn_decref(r);
        for (size_t k = 0; k < keep; k++)
            if (!seq_push(c, res, jn_incref(item))) goto bad;
    }
    jn_decref(input);
    return res;
bad:
    jn_decref(input);
    jn_decref(res);
    return NULL;
}

static jn_value *eval_stages(jn_state *c, const jn_node *n, jn_value *r /* owned */, jn_frame *env) {
    for (int i = 0; i < n->nstages && !FAILED(c); i++) {
        const jn_stage *st = &n->stages[i];
        if (st->kind == 0) {
            r = eval_filter(c, st->expr, r, env);
        } else if (r && r->type == JN_ARRAY) {
            for (size_t j = 0; j < r->u.arr.n; j++) {
                jn_value *t = r->u.arr.items[j];
                jn_value *num = jn_number((double)j);
                if (!num) return oom(c);
                if (t->type == JN_OBJECT && !tuple_set(c, t, st->var, num)) {
                    jn_decref(r);
                    return NULL;
                }
                if (t->type != JN_OBJECT) jn_decref(num);
            }
        }
    }
    if (FAILED(c)) {
        jn_decref(r);
        return NULL;
    }
    return r;
}

/* ---- sort ---- */
typedef struct sortkey {
    jn_value *item;
    jn_value **keys;
} sortkey;

static int sort_cmp(jn_state *c, const jn_node *n, sortkey *a, sortkey *b) {
    int comp = 0;
    for (int t = 0; t < n->nterms; t++) {
        jn_value *aa = a->keys[t], *bb = b->keys[t];
        if (!aa) {
            comp = bb ? 1 : 0;
            continue;
        }
        if (!bb) {
            comp = -1;
            continue;
        }
        bool an = aa->type == JN_NUMBER, as = aa->type == JN_STRING;
        bool bn = bb->type == JN_NUMBER, bs = bb->type == JN_STRING;
        if (!(an || as) || !(bn || bs)) {
            fail(c, n->position, NULL, "T2008", "The expressions within an order-by clause must evaluate to numeric or string values");
            return 0;
        }
        if (an != bn) {
            fail(c, n->position, NULL, "T2007", "Type mismatch within order-by clause. All values must be of the same type");
            return 0;
        }
        if (an) {
            if (aa->u.n == bb->u.n) continue;
            comp = aa->u.n < bb->u.n ? -1 : 1;
        } else {
            size_t ml = aa->u.str.len < bb->u.str.len ? aa->u.str.len : bb->u.str.len;
            int r = memcmp(aa->u.str.s, bb->u.str.s, ml);
            if (r == 0 && aa->u.str.len == bb->u.str.len) continue;
            comp = r < 0 || (r == 0 && aa->u.str.len < bb->u.str.len) ? -1 : 1;
        }
        if (n->terms[t].desc) comp = -comp;
        break;
    }
    return comp;
}

static void merge_sort(jn_state *c, const jn_node *n, sortkey *a, sortkey *tmp, size_t len) {
    if (len < 2 || FAILED(c)) return;
    size_t mid = len / 2;
    merge_sort(c, n, a, tmp, mid);
    merge_sort(c, n, a + mid, tmp, len - mid);
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < len) {
        if (sort_cmp(c, n, &a[i], &a[j]) == 1) tmp[k++] = a[j++];
        else tmp[k++] = a[i++];
    }
    while (i < mid) tmp[k++] = a[i++];
    while (j < len) tmp[k++] = a[j++];
    memcpy(a, tmp, len * sizeof *a);
}

static jn_value *eval_sort(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    if (!input) return NULL;
    jn_value *single = NULL;
    if (input->type != JN_ARRAY) {
        single = seq_new(c);
        if (!single || !seq_push(c, single, jn_incref(input))) {
            jn_decref(single);
            return NULL;
        }
        input = single;
    }
    bool tuples = input->flags & JN_F_TUPLE;
    size_t len = input->u.arr.n;
    sortkey *keys = calloc(len + 1, sizeof *keys);
    sortkey *tmp = calloc(len + 1, sizeof *tmp);
    jn_value **kv = calloc(len * (size_t)n->nterms + 1, sizeof *kv);
    jn_value *res = NULL;
    if (!keys || !tmp || !kv) {
        oom(c);
        goto done;
    }
    for (size_t i = 0; i < len && !FAILED(c); i++) {
        keys[i].item = input->u.arr.items[i];
        keys[i].keys = kv + i * (size_t)n->nterms;
        jn_value *ctx = keys[i].item;
        jn_frame *fenv = env;
        if (tuples) {
            ctx = tuple_ctx(keys[i].item);
            fenv = frame_from_tuple(c, env, keys[i].item);
            if (!fenv) break;
        }
        for (int t = 0; t < n->nterms && !FAILED(c); t++) keys[i].keys[t] = ev(c, n->terms[t].expr, ctx, fenv);
    }
    if (FAILED(c)) goto done;
    merge_sort(c, n, keys, tmp, len);
    if (FAILED(c)) goto done;
    res = seq_new(c);
    if (!res) goto done;
    if (tuples) res->flags |= JN_F_TUPLE;
    for (size_t i = 0; i < len; i++)
        if (!seq_push(c, res, jn_incref(keys[i].item))) {
            jn_decref(res);
            res = NULL;
            break;
        }
done:
    if (kv)
        for (size_t i = 0; i < len * (size_t)n->nterms; i++) jn_decref(kv[i]);
    free(kv);
    free(keys);
    free(tmp);
    jn_decref(single);
    return res;
}

/* ---- group-by / object constructor ---- */
static jn_value *reduce_tuples(jn_state *c, jn_value *data) {
    if (!data || data->type != JN_ARRAY) return tuple_copy(c, data);
    jn_value *res = tuple_copy(c, data->u.arr.items[0]);
    if (!res) return NULL;
    for (size_t i = 1; i < data->u.arr.n; i++) {
        jn_value *t = data->u.arr.items[i];
        for (size_t k = 0; k < t->u.obj.n; k++) {
            jn_value *key = t->u.obj.ents[k].key;
            jn_value *prev = jn_incref(jn_object_get(res, key->u.str.s, key->u.str.len));
            jn_value *nv = append(c, prev, jn_incref(t->u.obj.ents[k].val));
            if (FAILED(c) || !jn_object_set_key(res, key, nv)) {
                jn_decref(res);
                return oom(c);
            }
        }
    }
    return res;
}

typedef struct group_ent {
    jn_value *key;
    jn_value *data;
    int pair;
} group_ent;

/* Object constructor over a single context item: no grouping bookkeeping needed. */
static jn_value *eval_group_single(jn_state *c, const jn_node *g, jn_value *item, jn_frame *env) {
    jn_value *res = jn_object_new((size_t)g->npairs);
    jn_value *stack_seen[16];
    jn_value **seen = g->npairs <= 16 ? stack_seen : calloc((size_t)g->npairs, sizeof *seen);
    int nseen = 0;
    if (!res || !seen) {
        jn_decref(res);
        if (seen && seen != stack_seen) free(seen);
        return oom(c);
    }
    for (int p = 0; p < g->npairs; p++) {
        jn_value *key = ev(c, g->pairs[p].key, item, env);
        if (FAILED(c)) goto bad;
        if (!key) continue;
        if (key->type != JN_STRING) {
            fail(c, g->position, NULL, "T1003", "Key in object structure must evaluate to a string; got: %s",
                 key->type == JN_NUMBER ? "number" : "non-string");
            jn_decref(key);
            goto bad;
        }
        /* a key produced by two different pairs is an error (D1009); one pair cannot
         * produce a key twice for a single item */
        for (int e = 0; e < nseen; e++) {
            jn_value *k = seen[e];
            if (k->u.str.len == key->u.str.len && !memcmp(k->u.str.s, key->u.str.s, k->u.str.len)) {
                fail(c, g->position, NULL, "D1009", "Multiple key definitions evaluate to same key: %s", key->u.str.s);
                jn_decref(key);
                goto bad;
            }
        }
        seen[nseen++] = key;
        jn_value *v = ev(c, g->pairs[p].val, item, env);
        if (FAILED(c)) goto bad;
        if (v && !jn_object_set_key(res, key, v)) {
            oom(c);
            goto bad;
        }
    }
    for (int e = 0; e < nseen; e++) jn_decref(seen[e]);
    if (seen != stack_seen) free(seen);
    return res;
bad:
    for (int e = 0; e < nseen; e++) jn_decref(seen[e]);
    if (seen != stack_seen) free(seen);
    jn_decref(res);
    return NULL;
}

static jn_value *eval_group(jn_state *c, const jn_node *g, jn_value *input, jn_frame *env) {
    bool reduce = input && input->type == JN_ARRAY && (input->flags & JN_F_TUPLE);
    if (!input || input->type != JN_ARRAY) return eval_group_single(c, g, input, env);
    jn_value *items = NULL;
    if (input && input->type == JN_ARRAY) items = jn_incref(input);
    else {
        items = seq_new(c);
        if (!items) return NULL;
        if (!seq_push(c, items, jn_incref(input))) {
            jn_decref(items);
            return NULL;
        }
    }
    size_t nitems = items->u.arr.n;
    bool empty = nitems == 0;
    if (empty && reduce) { /* an empty tuple stream groups into an empty object */
        jn_decref(items);
        jn_value *o = jn_object_new(0);
        return o ? o : oom(c);
    }
    if (empty) nitems = 1;
    jn_value *index = jn_object_new(0); /* key -> position in ents */
    group_ent *ents = NULL;
    size_t nents = 0, cents = 0;
    jn_value *res = NULL;
    if (!index) {
        oom(c);
        goto done;
    }
    for (size_t i = 0; i < nitems; i++) {
        jn_value *item = empty ? NULL : items->u.arr.items[i];
        jn_frame *fenv = env;
        jn_value *ctx = item;
        if (reduce && item) {
            fenv = frame_from_tuple(c, env, item);
            if (!fenv) goto done;
            ctx = tuple_ctx(item);
        }
        for (int p = 0; p < g->npairs; p++) {
            jn_value *key = ev(c, g->pairs[p].key, ctx, fenv);
            if (FAILED(c)) goto done;
            if (!key) continue;
            if (key->type != JN_STRING) {
                fail(c, g->position, NULL, "T1003", "Key in object structure must evaluate to a string; got: %s",
                     jn_type_of(key) == JN_NUMBER ? "number" : "non-string");
                jn_decref(key);
                goto done;
            }
            jn_value *pos = jn_object_get(index, key->u.str.s, key->u.str.len);
            if (pos) {
                group_ent *e = &ents[(size_t)pos->u.n];
                if (e->pair != p) {
                    jn_decref(key);
                    fail(c, g->position, NULL, "D1009", "Multiple key definitions evaluate to same key: %s", e->key->u.str.s);
                    goto done;
                }
                e->data = append(c, e->data, jn_incref(item));
                jn_decref(key);
                if (FAILED(c)) goto done;
            } else {
                if (nents == cents) {
                    size_t nc = cents ? cents * 2 : 8;
                    group_ent *ne = realloc(ents, nc * sizeof *ne);
                    if (!ne) {
                        jn_decref(key);
                        oom(c);
                        goto done;
                    }
                    ents = ne;
                    cents = nc;
                }
                jn_value *num = jn_number((double)nents);
                if (!num || !jn_object_set_key(index, key, num)) {
                    jn_decref(key);
                    oom(c);
                    goto done;
                }
                ents[nents].key = key;
                ents[nents].data = jn_incref(item);
                ents[nents].pair = p;
                nents++;
            }
        }
    }
    res = jn_object_new(nents);
    if (!res) {
        oom(c);
        goto done;
    }
    for (size_t i = 0; i < nents; i++) {
        jn_value *ctx = ents[i].data;
        jn_frame *fenv = env;
        jn_value *tuple = NULL;
        if (reduce) {
            tuple = reduce_tuples(c, ents[i].data);
            if (!tuple) goto fail_res;
            ctx = jn_object_get(tuple, "@", 1);
            fenv = frame_from_tuple(c, env, tuple);
            if (!fenv) {
                jn_decref(tuple);
                goto fail_res;
            }
        }
        jn_value *v = ev(c, g->pairs[ents[i].pair].val, ctx, fenv);
        jn_decref(tuple);
        if (FAILED(c)) goto fail_res;
        if (v && !jn_object_set_key(res, ents[i].key, v)) {
            oom(c);
            goto fail_res;
        }
    }
    goto done;
fail_res:
    jn_decref(res);
    res = NULL;
done:
    for (size_t i = 0; i < nents; i++) {
        jn_decref(ents[i].key);
        jn_decref(ents[i].data);
    }
    free(ents);
    jn_decref(index);
    jn_decref(items);
    return res;
}

/* ---- paths ---- */
static jn_value *ev_raw(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env);

/* evaluate a node as a path step on one item: raw value, then its own stages */
static jn_value *step_item(jn_state *c, const jn_node *step, jn_value *item, jn_frame *env) {
    /* the most common step, a plain field of an object: what ev_ex would do (the tick for
     * the time limit, the lookup, collapse) without its call, depth and stack checks,
     * which guard recursion this cannot do */
    if (step->type == N_NAME && !step->nstages && !step->group && item && item->type == JN_OBJECT && !FAILED(c)) {
        if ((++c->ticks & 1023) == 0 && !check_limits(c)) return NULL;
        jn_value *v = step->value ? jn_object_get_key(item, step->value, step->khash)
                                  : jn_object_get(item, step->str, step->slen);
        return collapse(step, jn_incref(v));
    }
    jn_value *r = ev_ex(c, step, item, env, true);
    for (int i = 0; i < step->nstages && !FAILED(c); i++)
        if (step->stages[i].kind == 0) r = eval_filter(c, step->stages[i].expr, r, env);
    return r;
}

static bool push_flat(jn_state *c, jn_value *res, jn_value *r /* owned */) {
    if (r->type != JN_ARRAY || (r->flags & JN_F_CONS)) return seq_push(c, res, r);
    for (size_t j = 0; j < r->u.arr.n; j++)
        if (!seq_push(c, res, jn_incref(r->u.arr.items[j]))) {
            jn_decref(r);
            return false;
        }
    jn_decref(r);
    return true;
}

/* One (non-tuple) path step over n input items. Returns a sequence, or — when exactly
 * one item produced a result — that result itself (a bare value or array), which the
 * caller treats exactly like the one-element sequence the reference builds. */
static jn_value *eval_step(jn_state *c, const jn_node *step, jn_value **items, size_t n,
                           jn_frame *env, bool last) {
    jn_value *res = NULL, *first = NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        jn_value *r = step_item(c, step, items[i], env);
        if (FAILED(c)) {
            jn_decref(res);
            jn_decref(first);
            return NULL;
        }
        if (!r) continue;
        if (++count == 1) {
            first = r;
            continue;
        }
        if (count == 2) {
            res = seq_new(c);
            if (!res) {
                jn_decref(first);
                jn_decref(r);
                return NULL;
            }
            jn_value *f = first;
            first = NULL;
            if (!push_flat(c, res, f)) {
                jn_decref(r);
                goto bad;
            }
        }
        if (!push_flat(c, res, r)) goto bad;
    }
    if (count == 0) return seq_new(c);
    if (count == 1) {
        if (first->type != JN_ARRAY) return first;
        if (first->u.arr.n == 0 && !last) {
            jn_decref(first);
            return seq_new(c);
        }
        if (!(first->flags & JN_F_CONS) && (!last || !jn_is_sequence(first))) return first;
        res = seq_new(c);
        if (!res || !push_flat(c, res, first)) goto bad;
    }
    return res;
bad:
    jn_decref(res);
    return NULL;
}

static jn_value *eval_tuple_step(jn_state *c, const jn_node *step, jn_value *input,
                                 jn_value *tuples /* owned, may be NULL */, jn_frame *env) {
    jn_value *res = NULL;
    if (step->type == N_SORT) {
        if (tuples) {
            res = eval_sort(c, step, tuples, env);
            jn_decref(tuples);
        } else {
            jn_value *sorted = eval_sort(c, step, input, env);
            if (FAILED(c)) return NULL;
            res = seq_new(c);
            if (!res) {
                jn_decref(sorted);
                return NULL;
            }
            res->flags |= JN_F_TUPLE;
            for (size_t i = 0; sorted && i < sorted->u.arr.n; i++) {
                jn_value *t = tuple_copy(c, NULL);
                if (!t || !tuple_set(c, t, "@", jn_incref(sorted->u.arr.items[i]))) {
                    jn_decref(t);
                    break;
                }
                if (step->index && !tuple_set(c, t, step->index, jn_number((double)i))) {
                    jn_decref(t);
                    break;
                }
                if (!seq_push(c, res, t)) break;
            }
            jn_decref(sorted);
        }
        if (FAILED(c)) {
            jn_decref(res);
            return NULL;
        }
        return eval_stages(c, step, res, env);
    }
    if (!tuples) {
        tuples = seq_new(c);
        if (!tuples) return NULL;
        for (size_t i = 0; input && i < input->u.arr.n; i++) {
            jn_value *t = tuple_copy(c, NULL);
            if (!t || !tuple_set(c, t, "@", jn_incref(input->u.arr.items[i])) ||
                !seq_push(c, tuples, t)) {
                jn_decref(tuples);
                return NULL;
            }
        }
    }
    res = seq_new(c);
    if (!res) goto bad;
    res->flags |= JN_F_TUPLE;
    for (size_t i = 0; i < tuples->u.arr.n; i++) {
        jn_value *tuple = tuples->u.arr.items[i];
        jn_frame *fenv = frame_from_tuple(c, env, tuple);
        if (!fenv) goto bad;
        jn_value *r = ev_ex(c, step, tuple_ctx(tuple), fenv, true);
        if (FAILED(c)) goto bad;
        if (!r) continue;
        bool rtuple = r->type == JN_ARRAY && (r->flags & JN_F_TUPLE);
        size_t cnt = r->type == JN_ARRAY ? r->u.arr.n : 1;
        for (size_t b = 0; b < cnt; b++) {
            jn_value *item = r->type == JN_ARRAY ? r->u.arr.items[b] : r;
            jn_value *t2 = tuple_copy(c, tuple);
            if (!t2) {
                jn_decref(r);
                goto bad;
            }
            bool ok = true;
            if (rtuple) {
                for (size_t k = 0; ok && k < item->u.obj.n; k++)
                    ok = jn_object_set_key(t2, item->u.obj.ents[k].key, jn_incref(item->u.obj.ents[k].val));
                if (!ok) oom(c);
            } else {
                if (step->focus) {
                    ok = tuple_set(c, t2, step->focus, jn_incref(item)) &&
                         tuple_set(c, t2, "@", jn_incref(tuple_ctx(tuple)));
                } else {
                    ok = tuple_set(c, t2, "@", jn_incref(item));
                }
                if (ok && step->index) ok = tuple_set(c, t2, step->index, jn_number((double)b));
                if (ok && step->label) ok = tuple_set(c, t2, step->label, jn_incref(tuple_ctx(tuple)));
            }
            if (!ok || !seq_push(c, res, t2)) {
                jn_decref(r);
                goto bad;
            }
        }
        jn_decref(r);
    }
    jn_decref(tuples);
    return eval_stages(c, step, res, env);
bad:
    jn_decref(tuples);
    jn_decref(res);
    return NULL;
}

/* The current step input as a sequence value (for sort, tuple and constructor steps). */
static jn_value *as_seq(jn_state *c, jn_value *cur, bool single) {
    if (!single && cur && cur->type == JN_ARRAY) return jn_incref(cur);
    jn_value *s = seq_new(c);
    if (s && !seq_push(c, s, jn_incref(cur))) {
        jn_decref(s);
        return NULL;
    }
    return s;
}

static jn_value *eval_path(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    const jn_node *s0 = n->items[0];
    if (n->nitems == 1 && s0->type == N_NAME && s0->value && !s0->nstages && !s0->tuple &&
        !s0->keep_array && !s0->group && !n->keep_array && !n->group &&
        (!input || input->type != JN_ARRAY)) {
        /* the common "field" path on a single object: a plain lookup */
        if (!input || input->type != JN_OBJECT) return NULL;
        return jn_incref(jn_object_get_key(input, s0->value, s0->khash));
    }
    /* cur is the step input: its items when it is an array (and !single), else itself */
    jn_value *cur = jn_incref(input);
    bool single = n->items[0]->type == N_VAR || !input || input->type != JN_ARRAY;
    jn_value *seq = NULL;
    jn_value *result = NULL, *tuples = NULL;
    bool is_tuple = false;
    for (int i = 0; i < n->nitems; i++) {
        const jn_node *step = n->items[i];
        if (step->tuple) is_tuple = true;
        if ((i == 0 && step->cons_array) || is_tuple || step->type == N_SORT) {
            jn_decref(seq);
            seq = as_seq(c, cur, single);
            if (!seq) {
                oom(c);
                goto bad;
            }
        }
        if (i == 0 && step->cons_array) {
            jn_decref(result);
            result = ev(c, step, seq, env);
        } else if (is_tuple) {
            tuples = eval_tuple_step(c, step, seq, tuples, env);
        } else if (step->type == N_SORT) {
            jn_decref(result);
            result = eval_stages(c, step, eval_sort(c, step, seq, env), env);
        } else {
            jn_decref(result);
            jn_value **items = single ? &cur : cur->u.arr.items;
            size_t cnt = single ? 1 : cur->u.arr.n;
            result = eval_step(c, step, items, cnt, env, i == n->nitems - 1);
        }
        if (FAILED(c)) goto bad;
        if (!is_tuple && (!result || (result->type == JN_ARRAY && result->u.arr.n == 0))) break;
        if (!step->focus && !is_tuple) {
            jn_decref(cur);
            cur = jn_incref(result);
            single = result->type != JN_ARRAY;
        }
    }
    jn_decref(cur);
    cur = NULL;
    jn_decref(seq);
    seq = NULL;
    if (is_tuple) {
        jn_decref(result);
        if (n->tuple) {
            result = jn_incref(tuples);
        } else {
            result = seq_new(c);
            if (!result) goto bad;
            for (size_t i = 0; tuples && i < tuples->u.arr.n; i++)
                if (!seq_push(c, result, jn_incref(tuple_ctx(tuples->u.arr.items[i])))) goto bad;
        }
    }
    if (n->keep_array && result) {
        if (result->type != JN_ARRAY || ((result->flags & JN_F_CONS) && !jn_is_sequence(result))) {
            jn_value *s = seq_new(c);
            if (!s || !seq_push(c, s, result)) {
                result = NULL;
                jn_decref(s);
                goto bad;
            }
            result = s;
        }
        if (result->type == JN_ARRAY) {
            if (result->rc != 1) {
                jn_value *cp = jn_array_copy(result, 0);
                jn_decref(result);
                result = cp;
                if (!cp) {
                    oom(c);
                    goto bad;
                }
            }
            result->flags |= JN_F_KEEP;
        }
    }
    if (n->group) {
        jn_value *g = eval_group(c, n->group, is_tuple ? tuples : result, env);
        jn_decref(result);
        result = g;
    }
    jn_decref(tuples);
    jn_decref(seq);
    return result;
bad:
    jn_decref(cur);
    jn_decref(seq);
    jn_decref(result);
    jn_decref(tuples);
    return NULL;
}

/* ---- operators ---- */
/* An operand of + - * / %: absent is fine (the result is absent), else a finite number. */
static bool arith_operand_ok(jn_state *c, const jn_node *n, const jn_value *v, const char *code, const char *side) {
    if (!v) return true;
    if (is_number(v) && isinf(v->u.n)) {
        fail(c, n->position, n->str, "D1001", "Number out of range");
        return false;
    }
    if (!is_number(v) || isnan(v->u.n)) {
        fail(c, n->position, n->str, code, "The %s side of the %s operator must evaluate to a number", side, n->str);
        return false;
    }
    return true;
}

/* ---- binary operators: one function each; l and r are borrowed (eval_binary owns them) ---- */
typedef jn_value *(*binop_fn)(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r);

static jn_value *op_arith(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    /* Each side in turn, left first, as jsonata-js's isNumeric: an infinite number is
     * D1001, NaN (from % 0, carried in a variable) is not a number at all (T2001/2). */
    if (!arith_operand_ok(c, n, l, "T2001", "left") || !arith_operand_ok(c, n, r, "T2002", "right")) return NULL;
    if (!l || !r) return NULL;
    double a = l->u.n, b = r->u.n, x;
    switch (n->op) {
    case OP_ADD: x = a + b; break;
    case OP_SUB: x = a - b; break;
    case OP_MUL: x = a * b; break;
    case OP_DIV: x = a / b; break;
    default: x = fmod(a, b); break;
    }
    jn_value *res = jn_number(x);
    return res ? res : oom(c);
}

static jn_value *op_equal(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    (void)c;
    bool eq = l && r && jn_deep_equal(l, r);
    return jn_bool(n->op == OP_NE ? l && r && !eq : eq);
}

/* -1, 0, 1; numbers or strings of one type (checked by the caller), no NaN */
static int compare_same(const jn_value *l, const jn_value *r) {
    if (l->type == JN_NUMBER) return l->u.n < r->u.n ? -1 : l->u.n > r->u.n;
    size_t ml = l->u.str.len < r->u.str.len ? l->u.str.len : r->u.str.len;
    int cmp = memcmp(l->u.str.s, r->u.str.s, ml);
    return cmp ? cmp : l->u.str.len < r->u.str.len ? -1 : l->u.str.len > r->u.str.len;
}

static jn_value *op_compare(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    bool lc = !l || l->type == JN_NUMBER || l->type == JN_STRING;
    bool rc = !r || r->type == JN_NUMBER || r->type == JN_STRING;
    if (!lc || !rc)
        return fail(c, n->position, n->str, "T2010", "The expressions either side of operator \"%s\" must evaluate to numeric or string values", n->str);
    if (!l || !r) return NULL;
    if (l->type != r->type)
        return fail(c, n->position, n->str, "T2009", "The values either side of operator \"%s\" must be of the same data type", n->str);
    if (l->type == JN_NUMBER && (isnan(l->u.n) || isnan(r->u.n))) return jn_bool(false); /* NaN is unordered */
    int cmp = compare_same(l, r);
    return jn_bool(n->op == OP_LT ? cmp < 0 : n->op == OP_LE ? cmp <= 0 : n->op == OP_GT ? cmp > 0 : cmp >= 0);
}

static jn_value *op_concat(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    jn_value *ls = l ? to_string(c, (jn_value *)l, n->position) : NULL;
    if (FAILED(c)) return NULL;
    jn_value *rs = r ? to_string(c, (jn_value *)r, n->position) : NULL;
    jn_value *res = NULL;
    if (!FAILED(c)) {
        res = jn_string_cat(ls ? ls->u.str.s : "", ls ? ls->u.str.len : 0, rs ? rs->u.str.s : "", rs ? rs->u.str.len : 0);
        if (!res) oom(c);
    }
    jn_decref(ls);
    jn_decref(rs);
    return res;
}

static jn_value *op_range(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    if (l && (!is_number(l) || l->u.n != floor(l->u.n)))
        return fail(c, n->position, n->str, "T2003", "The left side of the range operator (..) must evaluate to an integer");
    if (r && (!is_number(r) || r->u.n != floor(r->u.n)))
        return fail(c, n->position, n->str, "T2004", "The right side of the range operator (..) must evaluate to an integer");
    if (!l || !r || l->u.n > r->u.n) return NULL;
    double size = r->u.n - l->u.n + 1;
    if (size > 1e7 || size > (double)c->max_seq)
        return fail(c, n->position, n->str, "D2014", "The size of the sequence allocated by the range operator (..) must not exceed 1e7.  Attempted to allocate %.0f.", size);
    jn_value *res = jn_array_new((size_t)size);
    if (!res) return oom(c);
    for (size_t i = 0; i < (size_t)size; i++) {
        /* up to 1e7 allocations: the time limit and cancellation are checked on the way
         * (a caller running with a short budget relies on that) */
        jn_value *x = (i & 16383) == 16383 && !check_limits(c) ? NULL : jn_number(l->u.n + (double)i);
        if (!x) {
            jn_decref(res);
            return FAILED(c) ? NULL : oom(c);
        }
        res->u.arr.items[res->u.arr.n++] = x;
    }
    return res;
}

/* `in` compares as the reference's ===: scalars by value (NaN never), structures never. */
static bool strict_equal(const jn_value *a, const jn_value *b) {
    if (!a || !b || a->type != b->type || a->type == JN_OBJECT || a->type == JN_ARRAY) return a && a == b;
    return jn_deep_equal(a, b);
}

static jn_value *op_in(jn_state *c, const jn_node *n, const jn_value *l, const jn_value *r) {
    (void)c, (void)n;
    if (!l || !r) return jn_bool(false);
    if (r->type != JN_ARRAY) return jn_bool(strict_equal(r, l));
    for (size_t i = 0; i < r->u.arr.n; i++)
        if (strict_equal(r->u.arr.items[i], l)) return jn_bool(true);
    return jn_bool(false);
}

static const binop_fn BINOPS[] = {
    [OP_ADD] = op_arith,   [OP_SUB] = op_arith,   [OP_MUL] = op_arith,    [OP_DIV] = op_arith,
    [OP_MOD] = op_arith,   [OP_EQ] = op_equal,    [OP_NE] = op_equal,     [OP_LT] = op_compare,
    [OP_LE] = op_compare,  [OP_GT] = op_compare,  [OP_GE] = op_compare,   [OP_CONCAT] = op_concat,
    [OP_RANGE] = op_range, [OP_IN] = op_in,
};

/* and / or: the right side is evaluated only when the left does not decide. */
static jn_value *eval_logical(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    for (int side = 0; side < 2; side++) {
        jn_value *v = ev(c, side ? n->rhs : n->lhs, input, env);
        if (FAILED(c) || !finite_truth(c, v, n)) return NULL;
        bool b = jn_truthy(v);
        jn_decref(v);
        if (side == 1 || b == (n->op == OP_OR)) return jn_bool(b);
    }
    return NULL;
}

static jn_value *eval_binary(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    if (n->op == OP_AND || n->op == OP_OR) return eval_logical(c, n, input, env);
    jn_value *l = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    jn_value *r = ev(c, n->rhs, input, env);
    jn_value *res = FAILED(c) ? NULL : BINOPS[n->op](c, n, l, r);
    jn_decref(l);
    jn_decref(r);
    return res;
}

/* ---- functions ---- */
static jn_value *make_lambda(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_function *f = calloc(1, sizeof *f);
    if (!f) return oom(c);
    f->kind = FN_LAMBDA;
    f->lambda = n;
    f->env = env;
    frame_capture(env);
    f->input = jn_incref(input);
    f->sig = n->sig;
    f->borrowed_sig = true;
    jn_value *v = jn_function_value(f);
    if (!v) oom(c);
    return v;
}

int jn_fn_arity(const jn_value *fn) {
    if (!fn) return 0;
    if (fn->type == JN_REGEX) return 1;
    if (fn->type != JN_FUNCTION) return 0;
    const jn_function *f = fn->u.fn;
    switch (f->kind) {
    case FN_LAMBDA: return f->lambda->nitems;
    case FN_PARTIAL: {
        int k = 0;
        for (int i = 0; i < f->nargs; i++)
            if (f->ph[i]) k++;
        return k;
    }
    case FN_EXTERN: return jn_sig_arity(f->ext->sig);
    default: return jn_sig_arity(f->sig);
    }
}

static jn_value *unwrap_ctx(jn_value *input) {
    if (input && input->type == JN_ARRAY && (input->flags & JN_F_OUTER) && input->u.arr.n == 1)
        return input->u.arr.items[0];
    return input;
}

static jn_value *call_native(jn_state *c, jn_value *fnv, jn_native_fn fn, const jn_sig *sig,
                             jn_value **args, int nargs, jn_value *input, jn_frame *env,
                             int position, const char *name) {
    jn_value **vargs = args;
    int nv = nargs;
    bool lazy_ok = fnv->u.fn->lazy_ok;
    for (int i = 0; i < nargs && !lazy_ok; i++)
        if (!jn_force_deep(args[i])) return oom(c);
    jn_value *vbuf[12];
    if (sig && !jn_sig_validate(sig, args, nargs, unwrap_ctx(input), &vargs, &nv, position, name, c->err,
                                vbuf, 12))
        return NULL;
    bool forced = true;
    if (vargs != args && !lazy_ok)
        for (int i = 0; i < nv; i++)
            if (!jn_force_deep(vargs[i])) forced = false; /* context substitution */
    jn_call call = {c, input, env, fnv, position, name};
    gg_error e = GG_ERROR_INIT;
    jn_value *r = forced ? fn(&call, vargs, nv, &e) : NULL;
    if (!forced) jn_oom(&e);
    if (vargs != args) {
        for (int i = 0; i < nv; i++) jn_decref(vargs[i]);
        if (vargs != vbuf) free(vargs);
    }
    if (gg_error_is_set(&e)) {
        jn_decref(r);
        if (e.position < 0) e.position = position;
        if (!e.path && name) gg_error_set_path(&e, name);
        if (!FAILED(c)) gg_error_move(c->err, &e);
        gg_error_clear(&e);
        return NULL;
    }
    if (e.message || e.path) gg_error_clear(&e); /* a native that set no code allocated nothing, mostly */
    return r;
}

static jn_value *call_extern(jn_state *c, jn_value *fnv, const jn_extern *x, jn_value **args,
                             int nargs, jn_value *input, jn_frame *env, int position) {
    jn_value **vargs = args;
    int nv = nargs;
    jn_value *vbuf[12];
    if (x->sig && !jn_sig_validate(x->sig, args, nargs, input, &vargs, &nv, position, x->name, c->err,
                                   vbuf, 12))
        return NULL;
    json_t **jargs = calloc((size_t)nv + 1, sizeof *jargs);
    jn_value *res = NULL;
    if (!jargs) {
        oom(c);
        goto done;
    }
    for (int i = 0; i < nv; i++) jargs[i] = jn_to_json(vargs[i]);
    jn_call call = {c, input, env, fnv, position, x->name};
    gg_error e = GG_ERROR_INIT;
    json_t *r = x->fn(&call, jargs, nv, x->user, c->call_user, &e);
    for (int i = 0; i < nv; i++) json_decref(jargs[i]);
    if (gg_error_is_set(&e)) {
        if (e.position < 0) e.position = position;
        if (!e.path) gg_error_set_path(&e, x->name);
        gg_error_move(c->err, &e);
        json_decref(r);
        goto done;
    }
    gg_error_clear(&e);
    if (r) {
        res = jn_from_json(r);
        json_decref(r);
        if (!res) oom(c);
    }
done:
    free(jargs);
    if (vargs != args) {
        for (int i = 0; i < nv; i++) jn_decref(vargs[i]);
        if (vargs != vbuf) free(vargs);
    }
    return res;
}

static jn_value *regex_match_at(jn_state *c, jn_regex *re, jn_value *str, size_t off, jn_value *self_re);
static jn_value *run_transform(jn_state *c, const jn_node *n, jn_value *obj, jn_frame *env);

static jn_value *regex_next_native(jn_call *call, jn_value **args, int nargs, gg_error *err) {
    (void)args;
    (void)nargs;
    (void)err;
    jn_value *b = jn_fn_bound(call->self);
    jn_value *rev = b->u.arr.items[0], *str = b->u.arr.items[1];
    size_t off = (size_t)b->u.arr.items[2]->u.n;
    return regex_match_at(call->st, rev->u.re, str, off, rev);
}

/* The reference's regex closure result: {match, start, end, groups, next}. */
static jn_value *regex_match_at(jn_state *c, jn_regex *re, jn_value *str, size_t off, jn_value *self_re) {
    if (off > str->u.str.len) return NULL;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
    pcre2_match_context *mc = gg_regex_context(GG_REGEX_EXPRESSION); /* pathological patterns end in an error */
    if (!md || !mc) {
        pcre2_match_data_free(md);
        return oom(c);
    }
    int rc = pcre2_match(re->code, (PCRE2_SPTR)str->u.str.s, str->u.str.len, off, 0, md, mc);
    jn_value *res = NULL;
    if (rc < 0) {
        if (rc != PCRE2_ERROR_NOMATCH) fail(c, -1, NULL, "D1004", "Regular expression matching failed (%d)", rc);
        pcre2_match_data_free(md);
        return NULL;
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    size_t s = ov[0], e = ov[1];
    res = jn_object_new(5);
    jn_value *groups = jn_array_new((size_t)rc);
    if (!res || !groups) goto oomx;
    if (!jn_object_set(res, "match", 5, jn_string(str->u.str.s + s, e - s)) ||
        !jn_object_set(res, "start", 5, jn_number((double)jn_str_byte_to_u16(str, s))) ||
        !jn_object_set(res, "end", 3, jn_number((double)jn_str_byte_to_u16(str, e))))
        goto oomx;
    for (int g = 1; g < rc; g++) {
        jn_value *gv = ov[2 * g] == PCRE2_UNSET ? jn_string("", 0)
                                                  : jn_string(str->u.str.s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
        if (!gv || !jn_array_push(groups, gv)) goto oomx;
    }
    if (!jn_object_set(res, "groups", 6, groups)) {
        groups = NULL;
        goto oomx;
    }
    groups = NULL;
    jn_value *bound = jn_array_new(3);
    if (!bound) goto oomx;
    jn_array_push(bound, jn_incref(self_re));
    jn_array_push(bound, jn_incref(str));
    jn_array_push(bound, jn_number((double)(e > s ? e : e + 1)));
    gg_error ne = GG_ERROR_INIT;
    jn_value *next = jn_native_new("next", NULL, regex_next_native, bound, &ne);
    gg_error_clear(&ne);
    if (!next || !jn_object_set(res, "next", 4, next)) goto oomx;
    pcre2_match_data_free(md);
    return res;
oomx:
    pcre2_match_data_free(md);
    jn_decref(groups);
    jn_decref(res);
    return oom(c);
}

static bool is_thunk(const jn_value *v);

/* one application without trampolining; may return a thunk value */
static jn_value *apply_inner(jn_state *c, jn_value *fn, jn_value **args, int nargs,
                             jn_value *input, jn_frame *env, int position, const char *name) {
    if (!fn || (fn->type != JN_FUNCTION && fn->type != JN_REGEX))
        return fail(c, position, name, "T1006", "Attempted to invoke a non-function");
    if (fn->type == JN_REGEX) {
        jn_value *s = nargs > 0 ? args[0] : NULL;
        if (!s) return NULL;
        if (s->type != JN_STRING) return fail(c, position, name, "T0410", "Argument 1 of regex must be a string");
        return regex_match_at(c, fn->u.re, s, 0, fn);
    }
    jn_function *f = fn->u.fn;
    switch (f->kind) {
    case FN_LAMBDA: {
        jn_value **vargs = args;
        int nv = nargs;
        jn_value *vbuf[12];
        if (f->sig && !jn_sig_validate(f->sig, args, nargs, input, &vargs, &nv, position, name, c->err,
                                       vbuf, 12))
            return NULL;
        const jn_node *lam = f->lambda;
        if (lam->type == N_TRANSFORM) return run_transform(c, lam, nargs > 0 ? args[0] : NULL, f->env);
        jn_frame *fr = frame_new(c, f->env);
        if (!fr) return NULL;
        for (int i = 0; i < lam->nitems; i++)
            if (!frame_bind(c, fr, lam->items[i]->str, jn_incref(i < nv ? vargs[i] : NULL))) break;
        if (vargs != args) {
            for (int i = 0; i < nv; i++) jn_decref(vargs[i]);
            if (vargs != vbuf) free(vargs);
        }
        if (FAILED(c)) return NULL;
        jn_value *r = ev(c, lam->lhs, f->input, fr);
        if (!is_thunk(r)) frame_release(c, fr); /* a pending tail call still needs it */
        return r;
    }
    case FN_NATIVE:
        return call_native(c, fn, f->native, f->sig, args, nargs, input, env, position,
                           name ? name : f->builtin->name);
    case FN_CLOSURE:
        return call_native(c, fn, f->native, f->sig, args, nargs, input, env, position,
                           name ? name : f->name);
    case FN_EXTERN:
        return call_extern(c, fn, f->ext, args, nargs, input, env, position);
    case FN_THUNK: return NULL;
    case FN_COMPOSE: {
        jn_value *mid = apply_fn(c, f->target, args, nargs, input, env, position, name);
        if (FAILED(c)) return NULL;
        jn_value *r = apply_fn(c, f->bound, &mid, 1, input, env, position, name);
        jn_decref(mid);
        return r;
    }
    case FN_PARTIAL: {
        jn_value **full = calloc((size_t)f->nargs + 1, sizeof *full);
        if (!full) return oom(c);
        int k = 0;
        for (int i = 0; i < f->nargs; i++) full[i] = f->ph[i] ? (k < nargs ? args[k++] : NULL) : f->args[i];
        jn_value *r = apply_fn(c, f->target, full, f->nargs, input, env, position, name);
        free(full);
        return r;
    }
    }
    return NULL;
}

static bool is_thunk(const jn_value *v) {
    return v && v->type == JN_FUNCTION && v->u.fn->kind == FN_THUNK;
}

static jn_value *eval_call_args(jn_state *c, const jn_node *call, jn_value *input, jn_frame *env,
                                bool has_first, jn_value *first, jn_value ***out, int *nout,
                                jn_value **buf, int bufcap) {
    int na = call->nitems + (has_first ? 1 : 0);
    jn_value **args = na < bufcap ? buf : calloc((size_t)na + 1, sizeof *args);
    if (!args) return oom(c);
    int k = 0;
    if (has_first) args[k++] = jn_incref(first);
    for (int i = 0; i < call->nitems; i++) {
        args[k++] = ev(c, call->items[i], input, env);
        if (FAILED(c)) {
            for (int j = 0; j < k; j++) jn_decref(args[j]);
            if (args != buf) free(args);
            return NULL;
        }
    }
    *out = args;
    *nout = k;
    return NULL;
}

/* whether name is bound in scope or names a function (for T1005/T1007 hints) */
static bool name_bound(jn_state *c, jn_frame *env, const char *name) {
    jn_value *dummy;
    if (!name) return false;
    if (frame_lookup(env, name, &dummy)) return true;
    for (size_t i = 0; i < jn_builtins_count; i++)
        if (!strcmp(jn_builtins[i].name, name)) return true;
    for (size_t i = 0; c->env && i < c->env->n; i++)
        if (!strcmp(c->env->fns[i]->name, name)) return true;
    return false;
}

static const char *call_name(const jn_node *call) {
    const jn_node *p = call->lhs;
    if (!p) return NULL;
    if (p->type == N_PATH && p->nitems > 0) return p->items[0]->str;
    return p->str;
}

/* trampolined apply */
static jn_value *apply_fn(jn_state *c, jn_value *fn, jn_value **args, int nargs, jn_value *input,
                          jn_frame *env, int position, const char *name) {
    jn_value *r = apply_inner(c, fn, args, nargs, input, env, position, name);
    while (is_thunk(r) && !FAILED(c)) {
        const jn_node *call = r->u.fn->tcall;
        jn_value *tin = jn_incref(r->u.fn->input);
        jn_frame *tenv = r->u.fn->env;
        jn_decref(r);
        r = NULL;
        if (!check_limits(c)) {
            jn_decref(tin);
            break;
        }
        jn_value *proc = ev(c, call->lhs, tin, tenv);
        jn_value **a = NULL, *abuf[8];
        int na = 0;
        if (!FAILED(c)) eval_call_args(c, call, tin, tenv, false, NULL, &a, &na, abuf, 8);
        if (!FAILED(c)) {
            const char *nm = call_name(call);
            if (!proc && call->lhs->type == N_PATH) {
                if (name_bound(c, tenv, nm))
                    fail(c, call->position, nm, "T1005", "Attempted to invoke a non-function. Did you mean ${%s}?", nm);
            }
            if (!FAILED(c)) {
                r = apply_inner(c, proc, a, na, tin, tenv, call->position, nm);
                /* proc and args are evaluated and applied: the thunk's scope is done */
                if (!(is_thunk(r) && r->u.fn->env == tenv)) frame_release(c, tenv);
            }
        }
        for (int i = 0; i < na; i++) jn_decref(a[i]);
        if (a != abuf) free(a);
        jn_decref(proc);
        jn_decref(tin);
    }
    if (FAILED(c)) {
        jn_decref(r);
        return NULL;
    }
    return r;
}

static jn_value *make_thunk(jn_state *c, const jn_node *call, jn_value *input, jn_frame *env) {
    jn_function *f = calloc(1, sizeof *f);
    if (!f) return oom(c);
    f->kind = FN_THUNK;
    f->tcall = call;
    f->input = jn_incref(input);
    f->env = env;
    jn_value *v = jn_function_value(f);
    return v ? v : oom(c);
}

static jn_value *eval_call(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env,
                           bool has_applyto, jn_value *applyto, bool tail) {
    const char *nm = call_name(n);
    jn_value *proc = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    if (!proc && n->lhs->type == N_PATH && nm) {
        if (name_bound(c, env, nm))
            return fail(c, n->position, nm, "T1005", "Attempted to invoke a non-function. Did you mean ${%s}?", nm);
    }
    jn_value **args = NULL, *abuf[8];
    int na = 0;
    eval_call_args(c, n, input, env, has_applyto, applyto, &args, &na, abuf, 8);
    if (FAILED(c)) {
        jn_decref(proc);
        return NULL;
    }
    jn_value *r;
    const jn_function *pf = proc && proc->type == JN_FUNCTION ? proc->u.fn : NULL;
    /* a builtin directly: apply_inner would call it the same way, and it returns no thunk
     * for apply_fn to run */
    if (pf && pf->kind == FN_NATIVE)
        r = call_native(c, proc, pf->native, pf->sig, args, na, input, env, n->position, nm ? nm : pf->builtin->name);
    else
        r = tail ? apply_inner(c, proc, args, na, input, env, n->position, nm)
                 : apply_fn(c, proc, args, na, input, env, n->position, nm);
    if (FAILED(c) && c->err->position < 0) c->err->position = n->position;
    if (FAILED(c) && !c->err->path && nm) gg_error_set_path(c->err, nm);
    for (int i = 0; i < na; i++) jn_decref(args[i]);
    if (args != abuf) free(args);
    jn_decref(proc);
    return r;
}

static jn_value *eval_partial(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    const char *nm = call_name(n);
    jn_value *proc = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    if (!proc && n->lhs->type == N_PATH && nm) {
        if (name_bound(c, env, nm))
            return fail(c, n->position, nm, "T1007", "Attempted to partially apply a non-function. Did you mean ${%s}?", nm);
    }
    if (!proc || proc->type != JN_FUNCTION) {
        jn_decref(proc);
        return fail(c, n->position, nm, "T1008", "Attempted to partially apply a non-function");
    }
    jn_function *f = calloc(1, sizeof *f);
    if (!f) {
        jn_decref(proc);
        return oom(c);
    }
    f->kind = FN_PARTIAL;
    f->target = proc;
    f->nargs = n->nitems;
    f->args = calloc((size_t)n->nitems + 1, sizeof *f->args);
    f->ph = calloc((size_t)n->nitems + 1, sizeof *f->ph);
    jn_value *fv = jn_function_value(f);
    if (!fv) return oom(c);
    if (!f->args || !f->ph) {
        jn_decref(fv);
        return oom(c);
    }
    for (int i = 0; i < n->nitems; i++) {
        if (n->items[i]->type == N_PLACEHOLDER) f->ph[i] = true;
        else {
            f->args[i] = ev(c, n->items[i], input, env);
            if (FAILED(c)) {
                jn_decref(fv);
                return NULL;
            }
        }
    }
    return fv;
}

jn_value *jn_apply(jn_call *call, jn_value *fn, jn_value **args, int nargs, gg_error *err) {
    jn_state *c = call->st;
    gg_error *saved = c->err;
    gg_error local = GG_ERROR_INIT;
    c->err = &local;
    jn_value *r = apply_fn(c, fn, args, nargs, call->input, call->env, call->position, NULL);
    c->err = saved;
    if (r && !jn_force_deep(r)) jn_oom(&local);
    if (gg_error_is_set(&local)) {
        gg_error_move(err, &local);
        jn_decref(r);
        return NULL;
    }
    return r;
}

/* ---- transform ---- */

/* A deep copy of v's arrays and objects: for a transform (detach false) its objects are
 * marked JN_F_CLONE, to be updated in place while it runs, and share the leaves and keys;
 * detached (for a result that outlives the state), no immortal value but null/true/false
 * remains in it, since those of expressions compiled by $eval die with the state. */
static jn_value *copy_tree(jn_value *v, bool detach) {
    if (!v) return NULL;
    if (v->type == JN_ARRAY) {
        jn_value *a = jn_array_new(v->u.arr.n);
        if (!a) return NULL;
        a->flags = v->flags;
        for (size_t i = 0; i < v->u.arr.n; i++) {
            jn_value *x = v->u.arr.items[i] ? copy_tree(v->u.arr.items[i], detach) : NULL;
            if (v->u.arr.items[i] && !x) {
                jn_decref(a);
                return NULL;
            }
            a->u.arr.items[a->u.arr.n++] = x;
        }
        return a;
    }
    if (v->type == JN_OBJECT) {
        if (!jn_force(v)) return NULL;
        jn_value *o = jn_object_new(v->u.obj.n);
        if (!o) return NULL;
        if (!detach) o->flags = JN_F_CLONE;
        for (size_t i = 0; i < v->u.obj.n; i++) {
            jn_value *k = v->u.obj.ents[i].key, *x = copy_tree(v->u.obj.ents[i].val, detach);
            if (!x || !(detach ? jn_object_set(o, k->u.str.s, k->u.str.len, x) : jn_object_set_key(o, k, x))) {
                jn_decref(o);
                return NULL;
            }
        }
        return o;
    }
    if (!detach || v->rc >= 0 || v->type == JN_NULL || v->type == JN_BOOL) return jn_incref(v);
    if (v->type == JN_NUMBER) return jn_number(v->u.n);
    if (v->type == JN_STRING) return jn_string(v->u.str.s, v->u.str.len);
    return jn_string("", 0); /* functions/regexes from a dead expression */
}

static void object_delete(jn_value *o, const jn_value *key) {
    jn_object_remove(o, key->u.str.s, key->u.str.len);
}

/* Objects copied by a transform may be updated in place only while it runs. */
static void clear_clone_marks(jn_value *v, int depth) {
    if (!v || depth > 10000) return;
    if (v->type == JN_ARRAY) {
        for (size_t i = 0; i < v->u.arr.n; i++) clear_clone_marks(v->u.arr.items[i], depth + 1);
    } else if (v->type == JN_OBJECT && (v->flags & JN_F_CLONE)) {
        v->flags &= (uint8_t)~JN_F_CLONE;
        for (size_t i = 0; i < v->u.obj.n; i++) clear_clone_marks(v->u.obj.ents[i].val, depth + 1);
    }
}

static jn_value *run_transform(jn_state *c, const jn_node *n, jn_value *obj, jn_frame *env) {
    if (!obj) return NULL;
    jn_value *res = copy_tree(obj, false);
    if (!res) return oom(c);
    jn_value *matches = ev(c, n->lhs, res, env);
    if (FAILED(c)) goto bad;
    if (matches) {
        size_t cnt = matches->type == JN_ARRAY ? matches->u.arr.n : 1;
        for (size_t i = 0; i < cnt; i++) {
            jn_value *m = matches->type == JN_ARRAY ? matches->u.arr.items[i] : matches;
            jn_value *upd = ev(c, n->rhs, m, env);
            if (FAILED(c)) goto bad2;
            if (upd) {
                if (upd->type != JN_OBJECT) {
                    jn_decref(upd);
                    fail(c, n->rhs->position, NULL, "T2011", "The insert/update clause of the transform expression must evaluate to an object");
                    goto bad2;
                }
                if (!jn_force(upd)) {
                    jn_decref(upd);
                    oom(c);
                    goto bad2;
                }
                if (m && m->type == JN_OBJECT && (m->flags & JN_F_CLONE))
                    for (size_t k = 0; k < upd->u.obj.n; k++)
                        if (!jn_object_set_key(m, upd->u.obj.ents[k].key, jn_incref(upd->u.obj.ents[k].val))) {
                            jn_decref(upd);
                            oom(c);
                            goto bad2;
                        }
                jn_decref(upd);
            }
            if (n->third) {
                jn_value *del = ev(c, n->third, m, env);
                if (FAILED(c)) goto bad2;
                if (del) {
                    bool ok = del->type == JN_STRING;
                    if (del->type == JN_ARRAY) {
                        ok = true;
                        for (size_t k = 0; k < del->u.arr.n; k++)
                            if (jn_type_of(del->u.arr.items[k]) != JN_STRING) ok = false;
                    }
                    if (!ok) {
                        jn_decref(del);
                        fail(c, n->third->position, NULL, "T2012", "The delete clause of the transform expression must evaluate to a string or array of strings");
                        goto bad2;
                    }
                    if (m && m->type == JN_OBJECT && (m->flags & JN_F_CLONE)) {
                        if (del->type == JN_STRING) object_delete(m, del);
                        else
                            for (size_t k = 0; k < del->u.arr.n; k++) object_delete(m, del->u.arr.items[k]);
                    }
                    jn_decref(del);
                }
            }
        }
    }
    jn_decref(matches);
    clear_clone_marks(res, 0);
    return res;
bad2:
    jn_decref(matches);
bad:
    jn_decref(res);
    return NULL;
}

/* ---- main dispatch ---- */
/* $ alone is the context (the first item of an outer sequence); else a binding,
 * a built-in or an extension function */
static jn_value *eval_var(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    if (n->slen == 0) {
        if (input && input->type == JN_ARRAY && (input->flags & JN_F_OUTER))
            return jn_incref(input->u.arr.n ? input->u.arr.items[0] : NULL);
        return jn_incref(input);
    }
    jn_value *v;
    if (frame_lookup(env, n->str, &v)) return jn_incref(v);
    if (n->builtin_fn) return n->builtin_fn;
    if (n->ext) return n->ext->fnval;
    return NULL;
}

/* % is bound by the step it refers to */
static jn_value *eval_parent(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *v;
    if (n->label && frame_lookup(env, n->label, &v)) return jn_incref(v);
    return NULL;
}

static jn_value *eval_negate(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *v = ev(c, n->lhs, input, env);
    if (!v) return NULL;
    if (v->type != JN_NUMBER) {
        jn_decref(v);
        return fail(c, n->position, "-", "D1002", "Cannot negate a non-numeric value");
    }
    jn_value *r = jn_number(-v->u.n);
    jn_decref(v);
    return r ? r : oom(c);
}

/* [a, b]: items that are sequences are spread, nested constructors kept */
static jn_value *eval_array_cons(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *a = jn_array_new(n->nitems);
    if (!a) return oom(c);
    for (int i = 0; i < n->nitems; i++) {
        jn_value *v = ev(c, n->items[i], input, env);
        if (FAILED(c)) {
            jn_decref(a);
            return NULL;
        }
        if (!v) continue;
        if (n->items[i]->type == N_ARRAY || v->type != JN_ARRAY) {
            if (!seq_push(c, a, v)) {
                jn_decref(a);
                return NULL;
            }
        } else {
            for (size_t j = 0; j < v->u.arr.n; j++)
                if (!seq_push(c, a, jn_incref(v->u.arr.items[j]))) {
                    jn_decref(v);
                    jn_decref(a);
                    return NULL;
                }
            jn_decref(v);
        }
    }
    if (n->cons_array) a->flags |= JN_F_CONS;
    return a;
}

/* (e1; e2): a scope of its own when it binds; the value of the last */
static jn_value *eval_block(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_frame *fr = n->scope ? frame_new(c, env) : env;
    if (!fr) return NULL;
    jn_value *r = NULL;
    for (int i = 0; i < n->nitems; i++) {
        jn_decref(r);
        r = ev(c, n->items[i], input, fr);
        if (FAILED(c)) {
            jn_decref(r);
            return NULL;
        }
    }
    if (n->scope && !is_thunk(r)) frame_release(c, fr);
    return r;
}

static jn_value *eval_bind(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *v = ev(c, n->rhs, input, env);
    if (FAILED(c)) return NULL;
    if (!frame_bind(c, env, n->lhs->str, jn_incref(v))) {
        jn_decref(v);
        return NULL;
    }
    return v;
}

static jn_value *eval_condition(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *cond = ev(c, n->lhs, input, env);
    if (FAILED(c) || !finite_truth(c, cond, n)) return NULL;
    bool b = jn_truthy(cond);
    jn_decref(cond);
    if (b) return ev(c, n->rhs, input, env);
    if (n->third) return ev(c, n->third, input, env);
    return NULL;
}

static jn_value *eval_elvis(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *l = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    if (jn_truthy(l)) return l;
    jn_decref(l);
    return ev(c, n->rhs, input, env);
}

static jn_value *eval_coalesce(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *l = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    if (l) return l;
    return ev(c, n->rhs, input, env);
}

/* x ~> f(args) calls f with x first; f ~> g composes */
static jn_value *eval_apply(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    jn_value *l = ev(c, n->lhs, input, env);
    if (FAILED(c)) return NULL;
    const jn_node *r = n->rhs;
    jn_value *res = NULL;
    if (r->type == N_CALL) {
        res = eval_call(c, r, input, env, true, l, false);
        res = collapse(r, res);
    } else {
        jn_value *fn = ev(c, r, input, env);
        if (!FAILED(c)) {
            if (!jn_is_function(fn)) {
                fail(c, n->position, NULL, "T2006", "The right side of the function application operator ~> must be a function");
            } else if (jn_is_function(l)) {
                /* function composition */
                jn_function *f = calloc(1, sizeof *f);
                if (!f) oom(c);
                else {
                    f->kind = FN_COMPOSE;
                    f->target = jn_incref(l);
                    f->bound = jn_incref(fn);
                    res = jn_function_value(f);
                    if (!res) oom(c);
                }
            } else {
                res = apply_fn(c, fn, &l, 1, input, env, n->position, NULL);
            }
        }
        jn_decref(fn);
    }
    jn_decref(l);
    return res;
}

static jn_value *ev_raw(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    switch (n->type) {
    case N_NUMBER:
    case N_STRING:
    case N_VALUE:
    case N_REGEX: return jn_incref(n->value);
    case N_NAME: return eval_name(c, n, input);
    case N_VAR: return eval_var(c, n, input, env);
    case N_WILDCARD: return eval_wildcard(c, input);
    case N_DESCENDANT: return eval_descendants(c, input);
    case N_PARENT: return eval_parent(c, n, input, env);
    case N_PATH: return eval_path(c, n, input, env);
    case N_BINARY: return eval_binary(c, n, input, env);
    case N_NEGATE: return eval_negate(c, n, input, env);
    case N_ARRAY: return eval_array_cons(c, n, input, env);
    case N_OBJECT: return eval_group(c, n, input, env);
    case N_BLOCK: return eval_block(c, n, input, env);
    case N_BIND: return eval_bind(c, n, input, env);
    case N_CONDITION: return eval_condition(c, n, input, env);
    case N_ELVIS: return eval_elvis(c, n, input, env);
    case N_COALESCE: return eval_coalesce(c, n, input, env);
    case N_LAMBDA: return make_lambda(c, n, input, env);
    case N_CALL:
        if (n->thunk) return make_thunk(c, n, input, env);
        return eval_call(c, n, input, env, false, NULL, false);
    case N_PARTIAL: return eval_partial(c, n, input, env);
    case N_APPLY: return eval_apply(c, n, input, env);
    case N_SORT: return eval_sort(c, n, input, env);
    case N_TRANSFORM: return make_lambda(c, n, input, env); /* | pattern | update |: a one-parameter lambda */
    case N_PLACEHOLDER: return NULL;
    case N_FILTER_EXPR: return NULL;
    }
    return NULL;
}

static jn_value *ev_ex(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env, bool as_step) {
    if (FAILED(c)) return NULL;
    /* a literal number, string or constant without predicates: its value as compiled, with
     * none of the checks below, which guard recursion and long loops (a literal is neither)
     * and unwrap sequences (a literal is none) */
    if (n->type <= N_VAR && !n->nstages && !n->group) {
        if (n->type <= N_VALUE && n->value && !(n->value->flags & JN_F_SEQUENCE)) return jn_incref(n->value);
        /* a variable's value (a function's, mostly): a lookup, neither recursion nor loop */
        if (n->type == N_VAR) return collapse(n, eval_var(c, n, input, env));
    }
    char here;
    if (++c->depth > c->max_depth ||
        (c->stack_base && (long)((uintptr_t)c->stack_base - (uintptr_t)&here) > c->max_stack)) {
        c->depth--;
        return fail(c, n->position, NULL, "D1011", "Stack overflow error: Check for non-terminating recursive function.  Consider rewriting as tail-recursive.");
    }
    if ((++c->ticks & 1023) == 0 && !check_limits(c)) {
        c->depth--;
        return NULL;
    }
    jn_value *r = ev_raw(c, n, input, env);
    if (!FAILED(c) && n->type != N_PATH && n->nstages && !as_step) {
        for (int i = 0; i < n->nstages && !FAILED(c); i++)
            if (n->stages[i].kind == 0) r = eval_filter(c, n->stages[i].expr, r, env);
    }
    if (!FAILED(c) && n->type != N_PATH && n->group) {
        jn_value *g = eval_group(c, n->group, r, env);
        jn_decref(r);
        r = g;
    }
    c->depth--;
    if (FAILED(c)) {
        jn_decref(r);
        return NULL;
    }
    return collapse(n, r);
}

/* ---- entry points ---- */
static void state_init(jn_state *c, const jsonata_env *env, const jsonata_options *opts,
                       void *call_user, gg_error *err) {
    memset(c, 0, sizeof *c);
    c->env = env;
    c->err = err;
    c->max_depth = (opts && opts->max_depth > 0) ? opts->max_depth : DEFAULT_MAX_DEPTH;
    c->max_seq = (opts && opts->max_sequence_length > 0) ? opts->max_sequence_length : DEFAULT_MAX_SEQ;
    c->time_limit = opts ? opts->time_limit_ms : 0;
    c->cancel = opts ? opts->cancel : NULL;
    if (c->time_limit > 0) c->start_ms = gg_now_ms();
    c->max_stack = (opts && opts->max_stack_bytes > 0) ? opts->max_stack_bytes : DEFAULT_MAX_STACK;
    c->call_user = call_user;
}

static void state_free(jn_state *c) {
    frames_free(c);
    while (c->keep) {
        jn_keep *k = c->keep;
        c->keep = k->next;
        jsonata_free(k->expr);
        free(k);
    }
}

/* Wrap a top-level array input the way the reference does (outer wrapper sequence). */
static jn_value *wrap_input(jn_state *c, jn_value *input) {
    if (input && input->type == JN_ARRAY && !jn_is_sequence(input)) {
        jn_value *s = seq_new(c);
        if (!s || !seq_push(c, s, input)) {
            jn_decref(s);
            return NULL;
        }
        s->flags |= JN_F_OUTER;
        return s;
    }
    return input;
}

static jn_value *evaluate_ast(const jn_node *ast, jn_value *input, jn_value *bindings,
                              const jsonata_env *env, const jsonata_options *opts,
                              void *call_user, gg_error *err) {
    jn_state c;
    state_init(&c, env, opts, call_user, err);
    char base;
    c.stack_base = &base; /* the stack grows down on every platform we build for */
    jn_value *res = NULL;
    jn_frame root_store; /* the root scope lives on the stack: one allocation fewer */
    memset(&root_store, 0, sizeof root_store);
    root_store.b = root_store.inline_b;
    root_store.cap = 2;
    root_store.captured = true; /* never recycled */
    jn_frame *root = &root_store;
    jn_value *in = wrap_input(&c, input); /* consumed: must die before $eval'd ASTs */
    if (root && !FAILED(&c)) {
        if (frame_bind(&c, root, "$", jn_incref(in)) && bindings && bindings->type == JN_OBJECT) {
            for (size_t i = 0; i < bindings->u.obj.n; i++)
                if (!frame_bind(&c, root, bindings->u.obj.ents[i].key->u.str.s,
                                jn_incref(bindings->u.obj.ents[i].val)))
                    break;
            /* keep the bindings object alive for the names */
            frame_bind(&c, root, "\x01bindings", jn_incref(bindings));
        }
        if (!FAILED(&c)) res = ev(&c, ast, in, root);
    }
    jn_decref(in);
    if (FAILED(&c)) {
        jn_decref(res);
        res = NULL;
    }
    /* values owned by expressions compiled by $eval die with the state: copy them */
    if (res && c.keep) {
        jn_value *d = copy_tree(res, true);
        jn_decref(res);
        res = d;
        if (!res) jn_oom(err);
    }
    for (int i = 0; i < root_store.n; i++) jn_decref(root_store.b[i].v);
    if (root_store.b != root_store.inline_b) free(root_store.b);
    state_free(&c);
    return res;
}

jn_value *jn_eval_source(jn_call *call, const char *expr, size_t len, jn_value *input,
                         jn_value *bindings, gg_error *err) {
    jn_state *c = call->st;
    char *src = strndup(expr, len);
    if (!src) {
        jn_oom(err);
        return NULL;
    }
    gg_error e = GG_ERROR_INIT;
    jsonata_expr *x = jsonata_compile(src, c->env, &e);
    free(src);
    if (!x) {
        gg_error_set(err, "D3120", "Syntax error in expression passed to function eval: %s",
                     e.message ? e.message : "");
        gg_error_clear(&e);
        return NULL;
    }
    jn_keep *k = malloc(sizeof *k);
    if (!k) {
        jsonata_free(x);
        jn_oom(err);
        return NULL;
    }
    k->expr = x;
    k->next = c->keep;
    c->keep = k;
    gg_error *saved = c->err;
    c->err = &e;
    jn_frame *env = call->env;
    if (bindings && bindings->type == JN_OBJECT) {
        if (!jn_force(bindings)) {
            jn_oom(err);
            return NULL;
        }
        env = frame_new(c, env);
        for (size_t i = 0; env && i < bindings->u.obj.n; i++)
            frame_bind(c, env, bindings->u.obj.ents[i].key->u.str.s, jn_incref(bindings->u.obj.ents[i].val));
        if (env) frame_bind(c, env, "\x01bindings", jn_incref(bindings));
    }
    jn_value *in = input ? wrap_input(c, jn_incref(input)) : jn_incref(call->input);
    jn_value *r = FAILED(c) ? NULL : ev(c, x->ast, in, env);
    jn_decref(in);
    c->err = saved;
    if (gg_error_is_set(&e)) {
        jn_decref(r);
        if (!strcmp(e.code, "D1011") || !strcmp(e.code, "D1012") || !strcmp(e.code, "D1013")) {
            gg_error_move(err, &e);
            return NULL;
        }
        gg_error_set(err, "D3121", "Error in expression passed to function eval: %s",
                     e.message ? e.message : "");
        gg_error_clear(&e);
        return NULL;
    }
    return r;
}

static jn_value *ev(jn_state *c, const jn_node *n, jn_value *input, jn_frame *env) {
    return ev_ex(c, n, input, env, false);
}

/* The values an evaluation creates count against its own memory budget (thread-local
 * while it runs; an evaluation nested in a native gets its own and the outer one resumes
 * after it). A refused allocation surfaces as out-of-memory somewhere below, or is
 * swallowed by a caller: either way the evaluation ends in D1014 at that position. */
jn_value *jn_evaluate_ast(const jn_node *ast, jn_value *input, jn_value *bindings,
                          const jsonata_env *env, const jsonata_options *opts,
                          void *call_user, gg_error *err) {
    jn_budget budget = {0, (opts && opts->max_memory_bytes > 0) ? opts->max_memory_bytes
                                                                : DEFAULT_MAX_MEMORY, 0, false};
    jn_budget *outer = jn_tl_budget;
    jn_tl_budget = &budget;
    jn_value *res = evaluate_ast(ast, input, bindings, env, opts, call_user, err);
    if (budget.exceeded) {
        jn_decref(res);
        res = NULL;
        int pos = gg_error_is_set(err) ? err->position : -1;
        gg_error_clear(err);
        gg_error_set(err, "D1014", "Evaluation exceeded its memory budget of %ld bytes", budget.limit);
        err->position = pos;
    }
    jn_tl_budget = outer;
    return res;
}
