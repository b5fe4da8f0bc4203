/* fn_common.h — shared helpers and the native entry points of the JSONata function
 * library (fn_*.c); functions.c lists them in the builtin table.
 *
 * Ownership: natives follow internal.h (borrowed args, new-reference results). */
#ifndef GG_JSONATA_FN_COMMON_H
#define GG_JSONATA_FN_COMMON_H

#include "jsonata/fnlib.h"
#include "jsonata/internal.h"

#define FN_ARG(i) (nargs > (i) ? args[(i)] : NULL)
#define FN(name) jn_value *name(jn_call *call, jn_value **args, int nargs, gg_error *err)

static inline const char *jn_s(const jn_value *v) { return v->u.str.s; }
static inline size_t jn_slen(const jn_value *v) { return v->u.str.len; }
static inline size_t jn_alen(const jn_value *v) { return v->u.arr.n; }
static inline jn_value *jn_aget(const jn_value *v, size_t i) { return v->u.arr.items[i]; }

/* Turn a finished buffer into a string value (D0000 on out-of-memory). */
jn_value *jn_fn_buf_result(gg_strbuf *b, gg_error *err);
/* Push v (owned) onto arr; sets err and returns false on OOM. */
bool jn_fn_push(jn_value *arr, jn_value *v, gg_error *err);

/* ---- regex matching (fn_regex.c) ---- */
typedef struct fn_hit {
    size_t start, end;        /* byte offsets of the whole match */
    int ngroups;
    const PCRE2_SIZE *ov;     /* regex: group i at ov[2i], ov[2i+1] (PCRE2_UNSET if none) */
    jn_value *groups;         /* custom matcher: its groups array (borrowed), or NULL */
} fn_hit;
/* Iterates the matches of a regex or of a custom matcher function (the reference's
 * protocol: fn(str) returns {match, start, end, groups, next()}). */
typedef struct fn_matcher {
    const jn_regex *re;
    jn_value *fn;             /* custom matcher (borrowed) */
    jn_value *cur;            /* last match object of a custom matcher (owned) */
    jn_value *str;            /* subject string (borrowed) */
    pcre2_match_data *md;
    pcre2_match_context *mctx; /* the expression budget's limits (util/regex.h) */
    const char *s;
    size_t len;
    size_t offset;
} fn_matcher;
/* pattern is a regex or a function value; str a string value. */
bool jn_fn_matcher_init(fn_matcher *m, jn_value *pattern, jn_value *str, gg_error *err);
/* Next match: 1 found, 0 none, -1 error (D1004 for zero-length matches as the reference,
 * T1010 for a custom matcher returning a malformed object). */
int jn_fn_matcher_next(jn_call *call, fn_matcher *m, fn_hit *out, gg_error *err);
void jn_fn_matcher_free(fn_matcher *m);
/* Group g (1-based) of a hit; false when the group did not participate. */
bool jn_fn_hit_group(const fn_hit *h, const char *s, int g, const char **p, size_t *n);
/* The reference's match object {match, index, groups}. */
jn_value *jn_fn_match_object(const jn_value *str, const fn_hit *mt, gg_error *err);
jn_value *jn_fn_replacer_object(jn_value *str, jn_value *pattern, const fn_hit *mt, gg_error *err);

/* Arity used when a higher-order function calls fn (fn_array.c). */
int jn_fn_hof_arity(const jn_value *fn);

/* ---- natives ---- */
/* strings */
FN(jn_fn_string); FN(jn_fn_length); FN(jn_fn_substring); FN(jn_fn_substring_before);
FN(jn_fn_substring_after); FN(jn_fn_uppercase); FN(jn_fn_lowercase); FN(jn_fn_trim); FN(jn_fn_pad);
FN(jn_fn_contains); FN(jn_fn_split); FN(jn_fn_join); FN(jn_fn_match); FN(jn_fn_replace); FN(jn_fn_eval);
FN(jn_fn_base64encode); FN(jn_fn_base64decode); FN(jn_fn_encode_url_component); FN(jn_fn_encode_url);
FN(jn_fn_decode_url_component); FN(jn_fn_decode_url); FN(jn_fn_format_number); FN(jn_fn_format_base);
FN(jn_fn_format_integer); FN(jn_fn_parse_integer);
/* numbers */
FN(jn_fn_number); FN(jn_fn_abs); FN(jn_fn_floor); FN(jn_fn_ceil); FN(jn_fn_round); FN(jn_fn_power);
FN(jn_fn_sqrt); FN(jn_fn_random); FN(jn_fn_sum); FN(jn_fn_max); FN(jn_fn_min); FN(jn_fn_average);
/* booleans */
FN(jn_fn_boolean); FN(jn_fn_not); FN(jn_fn_exists);
/* arrays */
FN(jn_fn_count); FN(jn_fn_append); FN(jn_fn_sort); FN(jn_fn_reverse); FN(jn_fn_shuffle); FN(jn_fn_distinct);
FN(jn_fn_zip);
/* objects */
FN(jn_fn_keys); FN(jn_fn_lookup); FN(jn_fn_spread); FN(jn_fn_merge); FN(jn_fn_each); FN(jn_fn_sift);
FN(jn_fn_error); FN(jn_fn_assert); FN(jn_fn_type); FN(jn_fn_clone);
/* higher order */
FN(jn_fn_map); FN(jn_fn_filter); FN(jn_fn_single); FN(jn_fn_reduce);
/* date/time */
FN(jn_fn_now); FN(jn_fn_millis); FN(jn_fn_from_millis); FN(jn_fn_to_millis);

#endif
