/* internal.h — what the files of src/console share (not a public header): the asset table
 * generated from src/console/assets/ by gen_assets.sh. */
#ifndef GG_CONSOLE_INTERNAL_H
#define GG_CONSOLE_INTERNAL_H

#include <stddef.h>

typedef struct gg_console_asset {
    const char *name;          /* file name under /console/ ("index.html" is /console) */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} gg_console_asset;

extern const gg_console_asset gg_console_assets[];
extern const size_t gg_console_asset_count;

#endif
