/* tool_check.c — a tool's schemas as tools/call checks them (mcp_tool_check_*), so the gateway
 * and `graphgate run` answer a bad call in the same words. The validator itself is
 * src/jsonschema. */
#include "mcp/mcp.h"

/* See mcp.h. The message is the one text every caller shows (the gateway's isError result,
 * `graphgate run`), so it is built here once. */
bool mcp_tool_check_arguments(const mcp_schema *input, const char *tool, json_t *args, gg_error *err) {
    gg_error e = GG_ERROR_INIT;
    if (!input || mcp_schema_validate(input, args, &e)) return true;
    gg_error_set(err, "invalid_params", "Invalid arguments for tool %s: %s: %s", tool,
                 e.path && *e.path ? e.path : "(root)", e.message ? e.message : "invalid");
    gg_error_set_path(err, e.path ? e.path : "");
    gg_error_clear(&e);
    return false;
}

/* See mcp.h. */
bool mcp_tool_check_output(const mcp_schema *output, const char *tool, json_t *structured, gg_error *err) {
    if (!output) return true;
    gg_error e = GG_ERROR_INIT;
    const char *why = NULL;
    if (!json_is_object(structured)) why = "the tool returned no structured content";
    else if (!mcp_schema_validate(output, structured, &e)) why = e.message;
    if (why)
        gg_error_set(err, "schema_violation", "Tool %s returned output that does not match its outputSchema: %s%s%s",
                     tool, e.path && *e.path ? e.path : "", e.path && *e.path ? ": " : "", why);
    gg_error_clear(&e);
    return why == NULL;
}
