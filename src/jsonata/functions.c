/* functions.c — the builtin function table: every JSONata 2.2 library function with the
 * reference's signature. The evaluator validates and coerces arguments against the
 * signature before calling the native (see internal.h). */
#include "jsonata/fn_common.h"

const jn_builtin jn_builtins[] = {
    /* aggregation */
    {"sum", "<a<n>:n>", jn_fn_sum},
    {"count", "<a:n>", jn_fn_count},
    {"max", "<a<n>:n>", jn_fn_max},
    {"min", "<a<n>:n>", jn_fn_min},
    {"average", "<a<n>:n>", jn_fn_average},
    /* strings */
    {"string", "<x-b?:s>", jn_fn_string},
    {"substring", "<s-nn?:s>", jn_fn_substring},
    {"substringBefore", "<s-s:s>", jn_fn_substring_before},
    {"substringAfter", "<s-s:s>", jn_fn_substring_after},
    {"lowercase", "<s-:s>", jn_fn_lowercase},
    {"uppercase", "<s-:s>", jn_fn_uppercase},
    {"length", "<s-:n>", jn_fn_length},
    {"trim", "<s-:s>", jn_fn_trim},
    {"pad", "<s-ns?:s>", jn_fn_pad},
    {"match", "<s-f<s:o>n?:a<o>>", jn_fn_match},
    {"contains", "<s-(sf):b>", jn_fn_contains},
    {"replace", "<s-(sf)(sf)n?:s>", jn_fn_replace},
    {"split", "<s-(sf)n?:a<s>>", jn_fn_split},
    {"join", "<a<s>s?:s>", jn_fn_join},
    {"formatNumber", "<n-so?:s>", jn_fn_format_number},
    {"formatBase", "<n-n?:s>", jn_fn_format_base},
    {"formatInteger", "<n-s:s>", jn_fn_format_integer},
    {"parseInteger", "<s-s:n>", jn_fn_parse_integer},
    {"base64encode", "<s-:s>", jn_fn_base64encode},
    {"base64decode", "<s-:s>", jn_fn_base64decode},
    {"encodeUrlComponent", "<s-:s>", jn_fn_encode_url_component},
    {"encodeUrl", "<s-:s>", jn_fn_encode_url},
    {"decodeUrlComponent", "<s-:s>", jn_fn_decode_url_component},
    {"decodeUrl", "<s-:s>", jn_fn_decode_url},
    {"eval", "<sx?:x>", jn_fn_eval},
    /* numbers */
    {"number", "<(nsb)-:n>", jn_fn_number},
    {"floor", "<n-:n>", jn_fn_floor},
    {"ceil", "<n-:n>", jn_fn_ceil},
    {"round", "<n-n?:n>", jn_fn_round},
    {"abs", "<n-:n>", jn_fn_abs},
    {"sqrt", "<n-:n>", jn_fn_sqrt},
    {"power", "<n-n:n>", jn_fn_power},
    {"random", "<:n>", jn_fn_random},
    /* booleans */
    {"boolean", "<x-:b>", jn_fn_boolean},
    {"not", "<x-:b>", jn_fn_not},
    {"exists", "<x:b>", jn_fn_exists},
    /* higher order */
    {"map", "<af>", jn_fn_map},
    {"zip", "<a+>", jn_fn_zip},
    {"filter", "<af>", jn_fn_filter},
    {"single", "<af?>", jn_fn_single},
    {"reduce", "<afj?:j>", jn_fn_reduce},
    {"sift", "<o-f?:o>", jn_fn_sift},
    /* objects and arrays */
    {"keys", "<x-:a<s>>", jn_fn_keys},
    {"lookup", "<x-s:x>", jn_fn_lookup},
    {"append", "<xx:a>", jn_fn_append},
    {"spread", "<x-:a<o>>", jn_fn_spread},
    {"merge", "<a<o>:o>", jn_fn_merge},
    {"reverse", "<a:a>", jn_fn_reverse},
    {"each", "<o-f:a>", jn_fn_each},
    {"error", "<s?:x>", jn_fn_error},
    {"assert", "<bs?:x>", jn_fn_assert},
    {"type", "<x:s>", jn_fn_type},
    {"sort", "<af?:a>", jn_fn_sort},
    {"shuffle", "<a:a>", jn_fn_shuffle},
    {"distinct", "<x:x>", jn_fn_distinct},
    {"clone", "<(oa)-:o>", jn_fn_clone},
    /* date/time */
    {"now", "<s?s?:s>", jn_fn_now},
    {"millis", "<:n>", jn_fn_millis},
    {"fromMillis", "<n-s?s?:s>", jn_fn_from_millis},
    {"toMillis", "<s-s?:n>", jn_fn_to_millis},
};

const size_t jn_builtins_count = sizeof jn_builtins / sizeof jn_builtins[0];
