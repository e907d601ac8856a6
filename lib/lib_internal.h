/* What the library's families (lib/scan.c, lib/sort.c, ...) share: the
 * embedded kernel sources, the compiled kernels, the scratch, and the
 * shape helpers. */
#ifndef TJ_LIB_INTERNAL_H
#define TJ_LIB_INTERNAL_H

#include <pthread.h>

#include "tilejit/dispatch.h"
#include "tilejit/lib.h"

/* lib/kernels/NAME.tj as a C string (the build generates the table). */
typedef struct lib_source {
    const char *name; /* "scan", "sort", ... */
    const char *text;
} lib_source;
extern const lib_source tj_lib_sources[];
extern const unsigned tj_lib_nsources;

/* One substitution in a kernel source: every "$KEY" becomes value. */
typedef struct lib_subst {
    const char *key;
    const char *value;
} lib_subst;

typedef struct lib_kernel {
    char *key;    /* family, kernel and substitutions (lib_dispatch's lookup: no text built per call) */
    size_t key_len;
    tj_dispatch *d;
} lib_kernel;

typedef struct lib_scratch {
    void *stream;
    int owner; /* lib_scratch_owner: an algorithm's buffer and one it calls on are apart */
    void *data;
    size_t bytes;
} lib_scratch;

/* Scratch is never freed or handed to another stream before close: work in
 * flight, and a CUDA graph captured on the stream, keep using its address.
 * So the table grows with the streams (a capture often runs on a new one). */
struct tj_lib {
    tj_jit *jit;
    int64_t segment; /* tj_lib_options.segment, the default filled in */
    pthread_mutex_t lock;
    lib_kernel *kernels;
    uint32_t nkernels, cap;
    lib_scratch *scratch; /* one per (stream, owner) */
    uint32_t nscratch, scratch_cap;
    void **retired; /* outgrown scratch, freed at close (work in flight may still use it) */
    uint32_t nretired, retired_cap;
};

/* The dispatch of `kernel` in lib/kernels/FAMILY.tj after the
 * substitutions (any number; a key that `kernel` does not read may be left
 * out: lib.c's placeholders), compiled on first use and kept (owned by l). */
tj_dispatch *lib_dispatch(tj_lib *l, const char *family, const char *kernel, const lib_subst *subst,
                          uint32_t nsubst, tj_rt_error *err);
/* lib/kernels/FAMILY.tj substituted as lib_dispatch substitutes it for
 * `kernel` (NULL: for every kernel of the family, no key taken from the
 * stand-ins): malloc'ed, NULL with err. Tests lower the text themselves. */
char *lib_kernel_source(const char *family, const char *kernel, const lib_subst *subst, uint32_t nsubst,
                        tj_rt_error *err);
int lib_launch(tj_lib *l, tj_dispatch *d, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err);

/* `bytes` of scratch for work on `stream`, zeroed on the stream when
 * `zero` (by a kernel: no host synchronization), where l's jit runs.
 * NULL with err. */
void *lib_scratch_get(tj_lib *l, void *stream, size_t bytes, int zero, tj_rt_error *err);
/* The same from the buffer of `owner` (the radix sort's, apart from the
 * scan's it calls). */
enum lib_scratch_owner { LIB_SCRATCH_DEFAULT, LIB_SCRATCH_SORT, LIB_SCRATCH_TOPK };
void *lib_scratch_owned(tj_lib *l, void *stream, int owner, size_t bytes, int zero, tj_rt_error *err);
/* words u32 at data set to 0 by a kernel on the stream. */
int lib_zero(tj_lib *l, void *data, size_t words, void *stream, tj_rt_error *err);

/* The inclusive cumsum of the 1-D tensors x into y (as tj_lib_cumsum), for
 * algorithms that hold l's lock (the radix sort's digit offsets). */
int lib_cumsum_1d(tj_lib *l, const tj_tensor *x, const tj_tensor *y, void *stream, tj_rt_error *err);

/* Arguments. */
tj_arg lib_tensor_arg(const tj_tensor *t);
tj_arg lib_buffer_arg(void *data, tj_dtype dt, int rank, const int64_t *shape);
tj_arg lib_int_arg(int64_t v);

/* x seen as [P, N, Q] around `axis`: N the axis, P the dims before it
 * merged, Q the dims after. Fails (err names `what`) where the dims do not
 * merge (a non-uniform stride) or P, Q or P * Q exceed what a kernel's i32
 * dims hold. N may be longer: each family cuts it into segments
 * (lib_segment, lib_segment_of). */
typedef struct lib_lines {
    int64_t p, n, q;
    int axis;
} lib_lines;
int lib_lines_of(const tj_tensor *x, int axis, const char *what, lib_lines *out, tj_rt_error *err);
/* t viewed as [P, N, Q] (lines from lib_lines_of on a tensor of t's shape). */
tj_tensor lib_as_lines(const tj_tensor *t, const lib_lines *ln);
/* Elements [at, at + len) of the axis of a [P, N, Q] view. */
tj_tensor lib_segment_of(const tj_tensor *lines, int64_t at, int64_t len);
/* The segment length of l for a family whose kernels take tiles of `tile`
 * elements along the axis: tj_lib_options.segment rounded down to a
 * multiple of it, at least one tile. */
int64_t lib_segment(const tj_lib *l, int64_t tile);
/* Whether two tensors have the same shape; err names them when not. */
int lib_same_shape(const tj_tensor *a, const tj_tensor *b, const char *fn, tj_rt_error *err);
int64_t lib_numel(const tj_tensor *t);

#endif
