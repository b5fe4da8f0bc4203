/* functions.c — the builtin function table: every JSONata 2.2 library function with the
 * reference's signature. The evaluator validates and coerces arguments against the
 * signature before calling the native (see internal.h). */
#include "jsonata/fn_common.h"

const jn_builtin jn_builtins[] = {
    /* aggregation */
    {"sum", "<a<n>:n>", fn_sum},
    {"count", "<a:n>", fn_count},
    {"max", "<a<n>:n>", fn_max},
    {"min", "<a<n>:n>", fn_min},
    {"average", "<a<n>:n>", fn_average},
    /* strings */
    {"string", "<x-b?:s>", fn_string},
    {"substring", "<s-nn?:s>", fn_substring},
    {"substringBefore", "<s-s:s>", fn_substring_before},
    {"substringAfter", "<s-s:s>", fn_substring_after},
    {"lowercase", "<s-:s>", fn_lowercase},
    {"uppercase", "<s-:s>", fn_uppercase},
    {"length", "<s-:n>", fn_length},
    {"trim", "<s-:s>", fn_trim},
    {"pad", "<s-ns?:s>", fn_pad},
    {"match", "<s-f<s:o>n?:a<o>>", fn_match},
    {"contains", "<s-(sf):b>", fn_contains},
    {"replace", "<s-(sf)(sf)n?:s>", fn_replace},
    {"split", "<s-(sf)n?:a<s>>", fn_split},
    {"join", "<a<s>s?:s>", fn_join},
    {"formatNumber", "<n-so?:s>", fn_format_number},
    {"formatBase", "<n-n?:s>", fn_format_base},
    {"formatInteger", "<n-s:s>", fn_format_integer},
    {"parseInteger", "<s-s:n>", fn_parse_integer},
    {"base64encode", "<s-:s>", fn_base64encode},
    {"base64decode", "<s-:s>", fn_base64decode},
    {"encodeUrlComponent", "<s-:s>", fn_encode_url_component},
    {"encodeUrl", "<s-:s>", fn_encode_url},
    {"decodeUrlComponent", "<s-:s>", fn_decode_url_component},
    {"decodeUrl", "<s-:s>", fn_decode_url},
    {"eval", "<sx?:x>", fn_eval},
    /* numbers */
    {"number", "<(nsb)-:n>", fn_number},
    {"floor", "<n-:n>", fn_floor},
    {"ceil", "<n-:n>", fn_ceil},
    {"round", "<n-n?:n>", fn_round},
    {"abs", "<n-:n>", fn_abs},
    {"sqrt", "<n-:n>", fn_sqrt},
    {"power", "<n-n:n>", fn_power},
    {"random", "<:n>", fn_random},
    /* booleans */
    {"boolean", "<x-:b>", fn_boolean},
    {"not", "<x-:b>", fn_not},
    {"exists", "<x:b>", fn_exists},
    /* higher order */
    {"map", "<af>", fn_map},
    {"zip", "<a+>", fn_zip},
    {"filter", "<af>", fn_filter},
    {"single", "<af?>", fn_single},
    {"reduce", "<afj?:j>", fn_reduce},
    {"sift", "<o-f?:o>", fn_sift},
    /* objects and arrays */
    {"keys", "<x-:a<s>>", fn_keys},
    {"lookup", "<x-s:x>", fn_lookup},
    {"append", "<xx:a>", fn_append},
    {"spread", "<x-:a<o>>", fn_spread},
    {"merge", "<a<o>:o>", fn_merge},
    {"reverse", "<a:a>", fn_reverse},
    {"each", "<o-f:a>", fn_each},
    {"error", "<s?:x>", fn_error},
    {"assert", "<bs?:x>", fn_assert},
    {"type", "<x:s>", fn_type},
    {"sort", "<af?:a>", fn_sort},
    {"shuffle", "<a:a>", fn_shuffle},
    {"distinct", "<x:x>", fn_distinct},
    {"clone", "<(oa)-:o>", fn_clone},
    /* date/time */
    {"now", "<s?s?:s>", fn_now},
    {"millis", "<:n>", fn_millis},
    {"fromMillis", "<n-s?s?:s>", fn_from_millis},
    {"toMillis", "<s-s?:n>", fn_to_millis},
};

const size_t jn_builtins_count = sizeof jn_builtins / sizeof jn_builtins[0];
