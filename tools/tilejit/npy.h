/* NumPy .npy files (format versions 1.0, 2.0 and 3.0), C order only.
 *
 * dtypes: |b1, i1..i8, u1..u8, f2, f4, f8, either byte order. NumPy has no
 * bfloat16; tilejit reads bf16 tensors from '<u2' arrays holding the raw
 * bits (what `x.view(np.uint16)` of an ml_dtypes bfloat16 array saves) or
 * from 2-byte void arrays ('|V2', what np.save writes for ml_dtypes
 * bfloat16), and writes bf16 as '<u2'.
 */
#ifndef TILEJIT_CLI_NPY_H
#define TILEJIT_CLI_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "tilejit/tilejit.h"

typedef struct npy_array {
    tj_dtype dtype;   /* '|V2' reads as TJ_DT_BF16, '<u2' as TJ_DT_U16 */
    char order;       /* '<' little, '>' big, '|' for one-byte types */
    int rank;
    int64_t shape[TJ_MAX_RANK];
    uint64_t numel;
    void *data;       /* numel elements in this machine's byte order */
} npy_array;

/* Reads PATH into arena memory. Errors are reported as `PATH: error: WHAT:
 * ...` (WHAT names the argument, e.g. "argument 'X'"). 0 on success. */
int npy_read(tj_ctx *c, const char *path, const char *what, npy_array *a);
/* The same from an open stream (PATH only names it in messages). Data
 * from a pipe is read as it arrives, never allocated ahead of it. */
int npy_read_stream(tj_ctx *c, FILE *f, const char *path, const char *what, npy_array *a);
/* Writes the array (header and data, in a->order) to f. 0 on success. */
int npy_write(FILE *f, const npy_array *a);
/* '<' or '>': this machine's byte order. */
char npy_host_order(void);
/* Bytes of numel * size, or 0 with *overflow set when it does not fit. */
uint64_t npy_bytes(uint64_t numel, int size, int *overflow);

#endif
