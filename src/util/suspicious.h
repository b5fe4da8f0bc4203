/* suspicious.h — invisible and direction-changing Unicode in text a downstream server
 * controls (tool names, titles, descriptions, schema strings): what a person reviewing a
 * definition cannot see but a model reads. One scanner for the graph loader (findings at
 * upload), the gateway (findings at every re-listing) and the console's escapes.
 *
 * Suspicious code points: tag characters U+E0000..U+E007F, zero-width U+200B..U+200D,
 * word joiner U+2060, U+FEFF, bidi embeddings/overrides U+202A..U+202E, isolates
 * U+2066..U+2069, and the marks U+200E/U+200F. */
#ifndef GG_SUSPICIOUS_H
#define GG_SUSPICIOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_t;

bool gg_suspicious_cp(uint32_t cp);
/* Suspicious code points in s (n bytes, UTF-8; invalid bytes are skipped); *first (may be
 * NULL) gets the first one. */
size_t gg_suspicious_scan(const char *s, size_t n, uint32_t *first);
/* Every string and object key of v, at most max_depth deep: the count of suspicious code
 * points; *first gets the first one and where (a JSON-pointer-like path, truncated to
 * where_size) it is. */
size_t gg_suspicious_json(const struct json_t *v, uint32_t *first, char *where, size_t where_size);
/* s with each suspicious code point written as ⟨U+XXXX⟩ (heap, NUL-terminated; NULL on
 * OOM): what a console or a diff shows. */
char *gg_suspicious_escape(const char *s, size_t n);

#endif
