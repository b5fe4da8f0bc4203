/* config_fuzz.c — libFuzzer target for the configuration loader: the input as a YAML
 * configuration file (through a memfd, as the loader reads a path), then validation and the
 * effective-configuration dump. Unknown keys, wrong types and odd YAML (aliases, tags,
 * several documents) must end in a positioned error, never a crash or a leak. */
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "app/app.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 16 * 1024) return 0;
    int fd = memfd_create("config.yaml", 0);
    if (fd < 0) return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gg_config c;
    gg_error err = GG_ERROR_INIT;
    if (gg_config_init(&c, &err)) {
        if (gg_config_load_file(&c, path, &err) && gg_config_validate(&c, &err)) {
            FILE *devnull = fopen("/dev/null", "w");
            if (devnull) {
                gg_config_dump(&c, devnull);
                fclose(devnull);
            }
        }
        gg_config_free(&c);
    }
    gg_error_clear(&err);
    close(fd);
    return 0;
}
