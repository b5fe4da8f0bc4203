/* jsonschema.h — a compiled JSON Schema validator for what tools (and schema/graph.schema.json)
 * need: tool arguments and results, specs' schemas, graph files.
 *
 * Ownership: mcp_schema_compile keeps a reference to the borrowed schema and returns an
 * owned handle (mcp_schema_free); validation borrows the instance and keeps nothing.
 *
 * Threads: a compiled schema is immutable; any number of threads may validate against it at
 * once (each validation keeps its own state). Compile and free on one thread.
 */
#ifndef GG_JSONSCHEMA_H
#define GG_JSONSCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"

/* A compiled validator for what tools (and schema/graph.schema.json) need: type,
 * properties, required, additionalProperties, patternProperties, propertyNames, enum,
 * const, items, prefixItems (and draft-7 tuple items/additionalItems), minItems/maxItems,
 * uniqueItems, contains, minContains/maxContains, minimum/maximum, exclusiveMinimum/Maximum (number and draft-4
 * boolean forms), multipleOf, minLength/maxLength (in code points), pattern (PCRE2, time
 * bounded, ECMA-262 meaning), minProperties/maxProperties, dependentRequired,
 * dependentSchemas, unevaluatedProperties/unevaluatedItems, $ref to "#..." JSON pointers
 * or "#name" $anchors ($defs/definitions, recursion bounded), allOf/anyOf/oneOf/not,
 * if/then/else, boolean schemas. Other keywords (format, title, description, default, ...) are annotations. */
typedef struct mcp_schema mcp_schema;

/* Compile a schema (borrowed; a reference is kept). NULL + err (code "invalid_schema"). */
mcp_schema *mcp_schema_compile(json_t *schema, gg_error *err);
void mcp_schema_free(mcp_schema *s);
/* true if instance conforms. Otherwise err gets code "schema_violation", the message and
 * the failing location as a JSON pointer in err->path ("" = the instance itself). */
bool mcp_schema_validate(const mcp_schema *s, json_t *instance, gg_error *err);
/* Report up to max violations (depth-first, instance pointer + message); returns how many. */
typedef void (*mcp_schema_error_fn)(void *user, const char *pointer, const char *message);
size_t mcp_schema_validate_all(const mcp_schema *s, json_t *instance, size_t max,
                               mcp_schema_error_fn fn, void *user);

#endif
