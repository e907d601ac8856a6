/* libFuzzer target: arbitrary bytes as a .npy file through the CLI's reader
 * (tools/tilejit/npy.c), read as a pipe (fmemopen: no size to check against)
 * or as a regular file (a memfd), chosen by the input's length. An array
 * that reads must write and read back the same. */
#define _GNU_SOURCE /* memfd_create, fmemopen, open_memstream */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npy.h"

/* A FILE over a copy of the bytes: a memfd (a regular file) or a memory
 * stream (no file descriptor, like a pipe). */
static FILE *open_bytes(const uint8_t *data, size_t size, int regular)
{
    if (!regular)
        return fmemopen((void *)data, size, "rb");
    int fd = memfd_create("fuzz.npy", 0);
    if (fd < 0)
        return NULL;
    if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return NULL;
    }
    return fdopen(fd, "rb");
}

static void check_round_trip(tj_ctx *c, const npy_array *a)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return;
    int wrote = npy_write(out, a) == 0;
    if (fclose(out) != 0) { /* the memory stream ran out: no finding */
        free(text);
        return;
    }
    if (!wrote)
        abort(); /* an array that reads must write */
    FILE *in = fmemopen(text, len, "rb");
    npy_array b;
    if (in && npy_read_stream(c, in, "round-trip.npy", "argument 'x'", &b) != 0)
        abort(); /* what was written does not read */
    size_t bytes = (size_t)a->numel * (size_t)tj_dtype_size(a->dtype);
    if (in && (b.dtype != a->dtype || b.rank != a->rank || memcmp(b.shape, a->shape, sizeof a->shape) ||
               memcmp(b.data, a->data, bytes)))
        abort(); /* ... or not the same */
    if (in)
        fclose(in);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tj_ctx *c = tj_ctx_new();
    FILE *f = c ? open_bytes(data, size, size % 2) : NULL;
    npy_array a;
    if (f && npy_read_stream(c, f, "fuzz.npy", "argument 'x'", &a) == 0)
        check_round_trip(c, &a);
    if (f)
        fclose(f);
    if (c)
        (void)tj_diag_render(c);
    tj_ctx_free(c);
    return 0;
}
