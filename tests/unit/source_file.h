/* A file of the source tree ($TJ_SOURCE_DIR, else the working directory),
 * whole, for tests that read the examples, the library's kernels or the
 * benchmark kernels: malloc'ed and NUL-terminated, or NULL after saying
 * which file could not be read. */
#ifndef TJ_TEST_SOURCE_FILE_H
#define TJ_TEST_SOURCE_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *tu_source_file(const char *rel)
{
    const char *root = getenv("TJ_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    FILE *f = fopen(path, "rb");
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = size >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size + 1) : NULL;
    size_t n = text ? fread(text, 1, (size_t)size, f) : 0;
    if (f)
        fclose(f);
    if (!text || n != (size_t)size) {
        printf("cannot read %s (TJ_SOURCE_DIR: the source tree)\n", path);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* tu_source_file with each dtype placeholder "{T}" (bench/gpu/kernels.tj.in)
 * as "f32" (as long: replaced in place). */
static inline char *tu_source_file_f32(const char *rel)
{
    char *text = tu_source_file(rel);
    for (char *t = text ? strstr(text, "{T}") : NULL; t; t = strstr(t, "{T}"))
        memcpy(t, "f32", 3);
    return text;
}

#endif
