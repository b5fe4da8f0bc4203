/* cmd_version.c — `graphgate version`. */
#include "cli/cli.h"

#include <jansson.h>
#include <microhttpd.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

int gg_cmd_version(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: graphgate version\n\nPrint graphgate's version and the versions of the libraries it runs on.\n");
        return GG_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "graphgate version: unexpected argument '%s'\n", argv[1]);
        return GG_EXIT_USAGE;
    }
    printf("graphgate %s\n", GG_VERSION);
    printf("libmicrohttpd %s, jansson %s, sqlite %s, libyaml %s, libsodium %s\n", MHD_get_version(),
           JANSSON_VERSION, sqlite3_libversion(), yaml_get_version_string(), sodium_version_string());
    return GG_EXIT_OK;
}
