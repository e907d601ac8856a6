/* The dispatching entry: one kernel, launched at any shapes, the entry an
 * array framework calls (docs/runtime.md).
 *
 *   tj_dispatch *d = tj_dispatch_new(j, &(tj_compile_request){
 *       .file = "softmax.tj", .source = src, .len = n, .kernel = "softmax"}, &err);
 *   tj_dispatch_launch(d, args, 2, stream, &err);   // any shapes, dtypes, strides
 *
 * A table keyed by the arguments' signature holds the functions compiled
 * for it. The signature is what a compile depends on: each argument's
 * dtype and rank, each dim's shape bucket (its size rounded up to a power
 * of two, as the tuner's records are kept), and on CUDA the facts a compile
 * specializes on (16-byte aligned data, a unit innermost stride, dims and
 * strides divisible by 16). A launch takes the function of the last exact
 * shapes from a memo (the fast path: one comparison), else the first
 * function of its signature whose contract holds (tj_fn_check), else
 * compiles one for these arguments: with the configuration tuned for the
 * signature when there is one (tj_dispatch_tune; under TJ_TUNE_MISSING a
 * new signature is tuned first), else as tj_jit_compile chooses (a stored
 * tuning winner, or the first configuration valid for these shapes). Every
 * compile and tuning reaches the jit's event handler with its reason.
 *
 * A dispatch holds every function it compiled until tj_dispatch_free (as a
 * Triton kernel keeps its specializations). Launches may come from several
 * threads; compiles and tunings are serialized.
 */
#ifndef TILEJIT_DISPATCH_H
#define TILEJIT_DISPATCH_H

#include "tilejit/jit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_dispatch tj_dispatch;

/* The kernel is req's (file, source, kernel; params: tile parameters held
 * fixed; arch); req->args are not used, each launch brings its own. The
 * source is parsed now (errors: the rendered diagnostics) and copied. */
tj_dispatch *tj_dispatch_new(tj_jit *j, const tj_compile_request *req, tj_rt_error *err);
void tj_dispatch_free(tj_dispatch *d); /* releases its functions */

/* The kernel's parameters as declared (owned by d). */
uint32_t tj_dispatch_params(const tj_dispatch *d, const tj_param **params);

int tj_dispatch_launch(tj_dispatch *d, const tj_arg *args, uint32_t nargs, void *stream, tj_rt_error *err);

/* The fixed function a launch with these arguments would run (compiled
 * if need be), with a hold for the caller (tj_fn_release); it refuses
 * arguments outside its contract. NULL with err. */
tj_fn *tj_dispatch_fn(tj_dispatch *d, const tj_arg *args, uint32_t nargs, tj_rt_error *err);

/* Times every configuration for these arguments' signature and keeps the
 * fastest for it: later launches of the signature compile that one. CUDA:
 * on random data in device memory, with the outcomes stored in the disk
 * cache (tilejit/autotune.h); tensors' data may be device pointers (not
 * read). The cpu: its native code (the interpreter without LLVM), the
 * median of 3 to 31 runs, on copies of the tensors (host memory, never
 * written; NULL data: zeros); the winner is kept in d, not stored. progress (may be NULL)
 * is called after each configuration, on this thread. 0 with the report
 * (free it with tj_tune_report_free in either case), or 1 with err. */
int tj_dispatch_tune(tj_dispatch *d, const tj_arg *args, uint32_t nargs,
                     void (*progress)(void *ud, uint32_t done, uint32_t total, const tj_tune_result *r), void *ud,
                     tj_tune_report *out, tj_rt_error *err);

/* ---- DLPack ----
 *
 * dlpack[i]: a DLTensor (dlpack.h; the first member of the DLManagedTensor
 * a "dltensor" capsule holds) for a tensor parameter, or NULL where args[i]
 * is already filled (a scalar, or a tensor the caller described). The
 * tensors must be where d's jit runs (the cpu: kDLCPU, kDLCUDAHost,
 * kDLCUDAManaged; CUDA device n: kDLCUDA device n, kDLCUDAManaged), of
 * bool, int, uint, float or bfloat with one lane, and rank <= TJ_MAX_RANK.
 * Errors name the parameter. */
int tj_dispatch_args_from_dlpack(const tj_dispatch *d, tj_arg *args, const void *const *dlpack, uint32_t nargs,
                                 tj_rt_error *err);
/* One DLTensor as a tj_tensor, for any device (no check of where it
 * lives): its DLPack device into *device_type and *device_id, and NULL, or
 * "dtype" or "rank" when tilejit cannot describe it (out untouched but for
 * the device), "NULL argument" for a NULL pointer. */
const char *tj_tensor_from_dlpack(const void *dltensor, tj_tensor *out, int32_t *device_type, int32_t *device_id);
/* Both in one call, for bindings: fills args, then tj_dispatch_launch. */
int tj_dispatch_launch_dlpack(tj_dispatch *d, tj_arg *args, const void *const *dlpack, uint32_t nargs, void *stream,
                              tj_rt_error *err);

/* Through DLPack's C exchange API (dlpack.h 1.3, DLPackExchangeAPI), which
 * a producer such as PyTorch publishes as `__dlpack_c_exchange_api__` on
 * its array type: objects[i] is a PyObject * of that type for a tensor
 * parameter (NULL where args[i] is filled), viewed as a DLTensor by the
 * producer's dltensor_from_py_object_no_sync (no capsule is made), and the
 * launch goes to the producer's current_work_stream of the tensors'
 * device. The caller holds the GIL (ctypes.PyDLL); a producer that fails
 * has set a Python exception. 0, 1 with err, or TJ_DISPATCH_OTHER_DEVICE
 * (nothing done) when the first tensor lives on another device than d's
 * jit: a binding may try the table of the device it saw last and fall
 * back to asking the array. */
enum { TJ_DISPATCH_OTHER_DEVICE = 2 };
int tj_dispatch_launch_exchange(tj_dispatch *d, const void *api, void *const *objects, tj_arg *args,
                                uint32_t nargs, tj_rt_error *err);
/* The same view for callers of the library's entries (tilejit/lib.h), which
 * take tj_tensors: out[i] describes objects[i] (untouched where objects[i]
 * is NULL), all on one DLPack device (*device_type, *device_id: the first
 * object's; 0, 0 when none), and *stream is the producer's current stream
 * there (NULL on the host). At most 64 objects; the caller holds the GIL.
 * 0, or 1 with err (a producer that fails has set a Python exception). */
int tj_tensors_from_exchange(const void *api, void *const *objects, uint32_t n, tj_tensor *out, int32_t *device_type,
                             int32_t *device_id, void **stream, tj_rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
