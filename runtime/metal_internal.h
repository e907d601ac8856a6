/* The Metal host runtime's private interface (metal.c, metal_launch.c):
 * every selector it sends, the classes it uses, its objects, and the
 * helpers both files share. */
#ifndef TJ_METAL_INTERNAL_H
#define TJ_METAL_INTERNAL_H

#include <pthread.h>

#include "runtime/metal_objc.h"
#include "tilejit/metal.h"

/* ---- every selector the runtime sends -------------------------------------------- */

#define TJ_SELECTORS(X)                                                                                      \
    X(ALLOC, "alloc") X(INIT, "init") X(NEW, "new") X(RELEASE, "release")                                    \
    X(STRING_WITH_UTF8, "stringWithUTF8String:") X(UTF8, "UTF8String")                                       \
    X(DESCRIPTION, "localizedDescription") X(NAME, "name") X(FILE_URL, "fileURLWithPath:")                   \
    X(ARRAY_WITH_OBJECT, "arrayWithObject:") X(NEW_QUEUE, "newCommandQueue")                                 \
    X(SET_FAST_MATH, "setFastMathEnabled:") X(SET_LANGUAGE, "setLanguageVersion:")                           \
    X(NEW_LIBRARY, "newLibraryWithSource:options:error:") X(NEW_FUNCTION, "newFunctionWithName:")           \
    X(SET_FUNCTION, "setComputeFunction:") X(SET_ARCHIVES, "setBinaryArchives:")                             \
    X(NEW_PIPELINE, "newComputePipelineStateWithDescriptor:options:reflection:error:")                       \
    X(MAX_THREADS, "maxTotalThreadsPerThreadgroup") X(SIMD_WIDTH, "threadExecutionWidth")                    \
    X(SET_URL, "setUrl:") X(NEW_ARCHIVE, "newBinaryArchiveWithDescriptor:error:")                            \
    X(ADD_FUNCTIONS, "addComputePipelineFunctionsWithDescriptor:error:") X(SERIALIZE, "serializeToURL:error:") \
    X(NEW_BUFFER_NOCOPY, "newBufferWithBytesNoCopy:length:options:deallocator:")                             \
    X(NEW_BUFFER_COPY, "newBufferWithBytes:length:options:") X(CONTENTS, "contents")                         \
    X(COMMAND_BUFFER, "commandBuffer") X(ENCODER, "computeCommandEncoder")                                   \
    X(SET_PIPELINE, "setComputePipelineState:") X(SET_BUFFER, "setBuffer:offset:atIndex:")                   \
    X(SET_BYTES, "setBytes:length:atIndex:") X(DISPATCH, "dispatchThreadgroups:threadsPerThreadgroup:")      \
    X(END_ENCODING, "endEncoding") X(COMMIT, "commit") X(WAIT, "waitUntilCompleted") X(STATUS, "status")    \
    X(ERROR, "error")

typedef enum tj_sel {
#define X(e, s) S_##e,
    TJ_SELECTORS(X)
#undef X
    S_COUNT
} tj_sel;

typedef enum tj_cls { C_NSSTRING, C_NSURL, C_NSARRAY, C_OPTIONS, C_PIPELINE_DESC, C_ARCHIVE_DESC, C_COUNT } tj_cls;

struct tj_metal_pipeline {
    uint64_t hash;
    char *msl;      /* the source, to tell hash collisions apart */
    char *function;
    id pso;
    tj_metal_pipeline *next;
};

struct tj_metal {
    id device, queue;
    SEL sel[S_COUNT];
    id cls[C_COUNT];
    char device_name[128];
    char cache_dir[1024]; /* "" when pipelines are not archived */
    pthread_mutex_t mu;
    tj_metal_pipeline *pipelines;
    tj_metal_stats stats;
};

/* Sends release (nil is skipped: the mock runtime refuses messages to nil). */
void tj_mtl_release(const tj_metal *m, id o);
/* An autoreleased NSString (a pool must be in place). */
id tj_mtl_string(const tj_metal *m, const char *s);
/* "metal: what: the NSError's description" into err. */
void tj_mtl_fail(tj_rt_error *err, const tj_metal *m, const char *what, id nserror);

#endif
