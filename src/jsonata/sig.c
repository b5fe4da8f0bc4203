/* sig.c — JSONata function signatures ("<s-nn?:s>"): parsing, and argument validation
 * with the reference's rules (undefined matches any parameter, '-' substitutes the
 * context value, 'a' parameters wrap single values, 'a<x>' checks element types). */
#include "jsonata/core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct jn_param {
    char cls[16];    /* accepted type symbols, always including 'm' (missing) */
    char type;       /* b n s l o a f j x u ( */
    char subtype[8]; /* a<n> */
    char quant;      /* 0, '?', '+' */
    bool context;    /* '-' */
    uint16_t mask;   /* cls as bits of sym_bit, for the common match */
} jn_param;

struct jn_sig {
    jn_param *params;
    int n;
    bool greedy_only; /* no '+' parameter: the first path match_from tries is the greedy walk */
};

/* One bit per type symbol of symbol_of (m l b n s a o f). */
static const uint16_t SYM_BIT[128] = {['m'] = 1, ['l'] = 2, ['b'] = 4, ['n'] = 8,
                                      ['s'] = 16, ['a'] = 32, ['o'] = 64, ['f'] = 128};
static uint16_t sym_bit(char c) { return (unsigned char)c < 128 ? SYM_BIT[(unsigned char)c] : 0; }

void jn_sig_free(jn_sig *sig) {
    if (!sig) return;
    free(sig->params);
    free(sig);
}

int jn_sig_arity(const jn_sig *sig) { return sig ? sig->n : 0; }

static const char *class_of(char t) {
    switch (t) {
    case 'b': return "bm";
    case 'n': return "nm";
    case 's': return "sm";
    case 'l': return "lm";
    case 'o': return "om";
    case 'f': return "f"; /* undefined never matches a function parameter */
    case 'a': return "asnblfom";
    case 'x': return "asnblfom";
    case 'j': return "asnblom";
    case 'u': return "bnslm";
    default: return NULL;
    }
}

jn_sig *jn_sig_parse(const char *s, gg_error *err) {
    jn_sig *sig = calloc(1, sizeof *sig);
    size_t len = strlen(s);
    if (!sig || !(sig->params = calloc(len + 1, sizeof(jn_param)))) {
        free(sig);
        jn_oom(err);
        return NULL;
    }
    size_t i = (s[0] == '<') ? 1 : 0;
    jn_param *last = NULL;
    for (; i < len; i++) {
        char c = s[i];
        if (c == ':' || c == '>') break;
        if (c == '?' || c == '+') {
            if (last) last->quant = c;
            continue;
        }
        if (c == '-') {
            if (last) last->context = true;
            continue;
        }
        if (c == '<') {
            if (!last || (last->type != 'a' && last->type != 'f')) {
                gg_error_set(err, "S0401", "Type parameters can only be applied to functions and arrays");
                err->position = (int)i;
                jn_sig_free(sig);
                return NULL;
            }
            int depth = 1;
            size_t st = i + 1, k = st;
            for (; k < len && depth; k++) {
                if (s[k] == '<') depth++;
                else if (s[k] == '>') depth--;
            }
            if (last->type == 'a') {
                size_t sl = k - 1 - st;
                if (sl >= sizeof last->subtype) sl = sizeof last->subtype - 1;
                memcpy(last->subtype, s + st, sl);
                last->subtype[sl] = '\0';
            }
            i = k - 1;
            continue;
        }
        if (c == '(') {
            last = &sig->params[sig->n++];
            last->type = '(';
            size_t k = i + 1, ci = 0;
            for (; k < len && s[k] != ')'; k++) {
                if (s[k] == '<') {
                    gg_error_set(err, "S0402", "Choice groups containing parameterized types are not supported");
                    err->position = (int)k;
                    jn_sig_free(sig);
                    return NULL;
                }
                const char *cl = class_of(s[k]);
                if (cl && ci < sizeof last->cls - 2) {
                    last->cls[ci++] = (s[k] == 'x' || s[k] == 'j' || s[k] == 'u') ? 0 : s[k];
                    if (!last->cls[ci - 1]) {
                        ci--;
                        for (const char *q = cl; *q && ci < sizeof last->cls - 2; q++)
                            if (!strchr(last->cls, *q)) last->cls[ci++] = *q;
                    }
                }
            }
            if (!strchr(last->cls, 'm')) last->cls[ci++] = 'm';
            i = k;
            continue;
        }
        const char *cl = class_of(c);
        if (!cl) {
            gg_error_set(err, "S0401", "Unknown type %c in function signature", c);
            err->position = (int)i;
            jn_sig_free(sig);
            return NULL;
        }
        last = &sig->params[sig->n++];
        last->type = c;
        strcpy(last->cls, cl);
    }
    sig->greedy_only = true;
    for (int k = 0; k < sig->n; k++) {
        jn_param *p = &sig->params[k];
        for (const char *q = p->cls; *q; q++) p->mask |= sym_bit(*q);
        if (p->quant == '+') sig->greedy_only = false;
    }
    return sig;
}

static char symbol_of(const jn_value *v) {
    switch (jn_type_of(v)) {
    case JN_UNDEFINED: return 'm';
    case JN_NULL: return 'l';
    case JN_BOOL: return 'b';
    case JN_NUMBER: return 'n';
    case JN_STRING: return 's';
    case JN_ARRAY: return 'a';
    case JN_OBJECT: return 'o';
    default: return 'f';
    }
}

/* The match_from would find first when no parameter repeats ('+'): each parameter takes
 * the next argument when its type fits, else none (allowed for '?' and '-' ones). Most
 * calls match this way; false sends the call through the backtracking match. */
static bool match_greedy(const jn_sig *sig, const char *sym, int nsym, int *counts) {
    if (!sig->greedy_only) return false;
    int ai = 0;
    for (int pi = 0; pi < sig->n; pi++) {
        const jn_param *p = &sig->params[pi];
        int k = ai < nsym && (p->mask & sym_bit(sym[ai])) ? 1 : 0;
        if (k == 0 && p->quant != '?' && !p->context) return false;
        counts[pi] = k;
        ai += k;
    }
    return ai == nsym;
}

/* Backtracking match of symbols against params; counts[i] receives how many args param i
 * took (0 or more). Returns the furthest argument index reached on failure via *good. */
static bool match_from(const jn_sig *sig, int pi, const char *sym, int ai, int nsym, int *counts,
                       int *good) {
    if (ai > *good) *good = ai;
    if (pi == sig->n) return ai == nsym;
    const jn_param *p = &sig->params[pi];
    int max = 0;
    while (ai + max < nsym && strchr(p->cls, sym[ai + max]) && (p->quant == '+' || max < 1)) max++;
    int min = (p->quant == '?' || p->context) ? 0 : 1;
    if (p->quant == '+') min = 1;
    for (int k = max; k >= min; k--) {
        counts[pi] = k;
        if (match_from(sig, pi + 1, sym, ai + k, nsym, counts, good)) return true;
    }
    return false;
}

/* Whether each parameter takes the argument in its place as it is: as many arguments as
 * parameters, none repeating, each of a type its parameter accepts, none to wrap in an
 * array or to check item by item. Most calls are such; the arguments are then the
 * validated vector itself (nothing copied, counted or released). */
static bool exact_match(const jn_sig *sig, jn_value **args, int nargs) {
    if (!sig->greedy_only || nargs != sig->n) return false;
    for (int i = 0; i < nargs; i++) {
        const jn_param *p = &sig->params[i];
        char s = symbol_of(args[i]);
        if (!(p->mask & sym_bit(s)) || (p->type == 'a' && (s != 'a' || p->subtype[0]))) return false;
    }
    return true;
}

bool jn_sig_validate(const jn_sig *sig, jn_value **args, int nargs, jn_value *context,
                     jn_value ***out, int *nout, int position, const char *name, gg_error *err,
                     jn_value **buf, int bufcap) {
    if (exact_match(sig, args, nargs)) {
        *out = args;
        *nout = nargs;
        return true;
    }
    char symbuf[64];
    int countbuf[16];
    char *sym = nargs < (int)sizeof symbuf ? symbuf : malloc((size_t)nargs + 1);
    int *counts = sig->n < 16 ? countbuf : calloc((size_t)sig->n + 1, sizeof(int));
    size_t rn = (size_t)nargs + (size_t)sig->n + 1;
    jn_value **res = (int)rn <= bufcap ? buf : calloc(rn, sizeof(jn_value *));
    if (res == buf) memset(buf, 0, rn * sizeof *buf);
    bool ok = false;
    if (!sym || !counts || !res) {
        jn_oom(err);
        goto done;
    }
    for (int i = 0; i < nargs; i++) sym[i] = symbol_of(args[i]);
    sym[nargs] = '\0';
    int good = 0;
    if (!match_greedy(sig, sym, nargs, counts) && !match_from(sig, 0, sym, 0, nargs, counts, &good)) {
        gg_error_set(err, "T0410", "Argument %d of function %s does not match function signature",
                     good + 1, name ? name : "");
        err->position = position;
        if (name) gg_error_set_path(err, name);
        goto done;
    }
    int ai = 0, ri = 0;
    for (int pi = 0; pi < sig->n; pi++) {
        const jn_param *p = &sig->params[pi];
        if (counts[pi] == 0) {
            if (p->context) {
                char cs = symbol_of(context);
                if (!strchr(p->cls, cs)) {
                    gg_error_set(err, "T0411", "Context value is not a compatible type with argument %d of function %s",
                                 ai + 1, name ? name : "");
                    err->position = position;
                    if (name) gg_error_set_path(err, name);
                    goto done;
                }
                res[ri++] = jn_incref(context);
            } else {
                /* the reference consumes an argument slot even when nothing matched */
                res[ri++] = jn_incref(ai < nargs ? args[ai] : NULL);
                ai++;
            }
            continue;
        }
        for (int k = 0; k < counts[pi]; k++) {
            jn_value *a = ai < nargs ? args[ai] : NULL;
            char s = ai < nargs ? sym[ai] : 'm';
            if (p->type == 'a' && s != 'm') {
                bool array_ok = true;
                if (p->subtype[0]) {
                    if (s != 'a' && s != p->subtype[0]) array_ok = false;
                    else if (s == 'a' && a->u.arr.n > 0) {
                        char it = symbol_of(a->u.arr.items[0]);
                        if (it != p->subtype[0]) array_ok = false;
                        for (size_t j = 1; array_ok && j < a->u.arr.n; j++)
                            if (symbol_of(a->u.arr.items[j]) != it) array_ok = false;
                    }
                }
                if (!array_ok) {
                    gg_error_set(err, "T0412", "Argument %d of function %s must be an array of %c",
                                 ai + 1, name ? name : "", p->subtype[0]);
                    err->position = position;
                    if (name) gg_error_set_path(err, name);
                    goto done;
                }
                if (s != 'a') {
                    jn_value *w = jn_array_new(1);
                    if (!w || !jn_array_push(w, jn_incref(a))) {
                        jn_decref(w);
                        jn_oom(err);
                        goto done;
                    }
                    res[ri++] = w;
                } else {
                    res[ri++] = jn_incref(a);
                }
            } else {
                res[ri++] = jn_incref(a);
            }
            ai++;
        }
    }
    *out = res;
    *nout = ri;
    res = NULL;
    ok = true;
done:
    if (res) {
        for (int i = 0; i < nargs + sig->n; i++) jn_decref(res[i]);
        if (res != buf) free(res);
    }
    if (counts != countbuf) free(counts);
    if (sym != symbuf) free(sym);
    return ok;
}
