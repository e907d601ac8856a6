/* CUDA C through NVRTC: what runtime/nvrtc*.c share. */
#ifndef TJ_NVRTC_INTERNAL_H
#define TJ_NVRTC_INTERNAL_H

#include "tilejit/nvrtc.h"
#include "tilejit/tilejit.h"

#define TJ_NVRTC_MAX_OPTS 96
#define TJ_NVRTC_DEFAULT_ARCH "sm_90"

/* The options NVRTC is given for src and arch, in order: -arch=compute_XX,
 * the defines, the include directories, the extra options. argv points
 * into `text` (NUL-separated; free it with tj_buf_free). Returns the count,
 * or -1 with err (a bad arch, too many options). One list serves the
 * compile and the cache key, so the key has exactly what NVRTC saw. */
int tj_nvrtc_options(const tj_cuda_source *src, const char *arch, tj_buf *text,
                     const char **argv, tj_rt_error *err);

/* "sm_", two or three digits, an optional 'a' or 'f'. */
int tj_nvrtc_valid_arch(const char *arch);

/* The file name diagnostics use for src. */
const char *tj_nvrtc_file_name(const tj_cuda_source *src);

/* Checks params against the .param list of entry `symbol` in ptx: the
 * count and each one's size (pointers 8 bytes). */
int tj_nvrtc_check_ptx_params(const char *ptx, const char *symbol, const tj_cuda_param *params,
                              uint32_t n, const char *kernel, tj_rt_error *err);

/* "f32*" and the like for messages and cache metadata. */
void tj_cuda_param_text(const tj_cuda_param *p, tj_buf *out);

#endif
