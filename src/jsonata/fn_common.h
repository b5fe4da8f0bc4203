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
jn_value *fn_buf_result(gg_strbuf *b, gg_error *err);
/* Push v (owned) onto arr; sets err and returns false on OOM. */
bool fn_push(jn_value *arr, jn_value *v, gg_error *err);

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
    const char *s;
    size_t len;
    size_t offset;
} fn_matcher;
/* pattern is a regex or a function value; str a string value. */
bool fn_matcher_init(fn_matcher *m, jn_value *pattern, jn_value *str, gg_error *err);
/* Next match: 1 found, 0 none, -1 error (D1004 for zero-length matches as the reference,
 * T1010 for a custom matcher returning a malformed object). */
int fn_matcher_next(jn_call *call, fn_matcher *m, fn_hit *out, gg_error *err);
void fn_matcher_free(fn_matcher *m);
/* Group g (1-based) of a hit; false when the group did not participate. */
bool fn_hit_group(const fn_hit *h, const char *s, int g, const char **p, size_t *n);
/* The reference's match object {match, index, groups}. */
jn_value *fn_match_object(const jn_value *str, const fn_hit *mt, gg_error *err);
jn_value *fn_replacer_object(jn_value *str, jn_value *pattern, const fn_hit *mt, gg_error *err);

/* Arity used when a higher-order function calls fn (fn_array.c). */
int fn_hof_arity(const jn_value *fn);

/* ---- natives ---- */
/* strings */
FN(fn_string); FN(fn_length); FN(fn_substring); FN(fn_substring_before);
FN(fn_substring_after); FN(fn_uppercase); FN(fn_lowercase); FN(fn_trim); FN(fn_pad);
FN(fn_contains); FN(fn_split); FN(fn_join); FN(fn_match); FN(fn_replace); FN(fn_eval);
FN(fn_base64encode); FN(fn_base64decode); FN(fn_encode_url_component); FN(fn_encode_url);
FN(fn_decode_url_component); FN(fn_decode_url); FN(fn_format_number); FN(fn_format_base);
FN(fn_format_integer); FN(fn_parse_integer);
/* numbers */
FN(fn_number); FN(fn_abs); FN(fn_floor); FN(fn_ceil); FN(fn_round); FN(fn_power);
FN(fn_sqrt); FN(fn_random); FN(fn_sum); FN(fn_max); FN(fn_min); FN(fn_average);
/* booleans */
FN(fn_boolean); FN(fn_not); FN(fn_exists);
/* arrays */
FN(fn_count); FN(fn_append); FN(fn_sort); FN(fn_reverse); FN(fn_shuffle); FN(fn_distinct);
FN(fn_zip);
/* objects */
FN(fn_keys); FN(fn_lookup); FN(fn_spread); FN(fn_merge); FN(fn_each); FN(fn_sift);
FN(fn_error); FN(fn_assert); FN(fn_type); FN(fn_clone);
/* higher order */
FN(fn_map); FN(fn_filter); FN(fn_single); FN(fn_reduce);
/* date/time */
FN(fn_now); FN(fn_millis); FN(fn_from_millis); FN(fn_to_millis);

#endif
