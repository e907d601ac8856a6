/* The Objective-C runtime and Metal, declared for C: everything the Metal
 * host runtime (metal.c) uses, so that it compiles without Apple's headers
 * (on Linux, where it is compile-checked and tested against a mock runtime,
 * tests/msl_emu/mock_objc.c). On macOS these are the system's own
 * functions and ABI. */
#ifndef TJ_METAL_OBJC_H
#define TJ_METAL_OBJC_H

#include <stddef.h>
#include <stdint.h>

typedef struct objc_object *id;
typedef struct objc_selector *SEL;
typedef unsigned long NSUInteger; /* LP64 on every Apple platform Metal runs on */
typedef long NSInteger;
#if defined(__aarch64__)
typedef _Bool tj_objc_bool; /* BOOL: bool on arm64, signed char on x86-64; one byte either way */
#else
typedef signed char tj_objc_bool;
#endif

typedef struct MTLSize {
    NSUInteger width, height, depth;
} MTLSize;

enum {
    TJ_MTL_STORAGE_SHARED = 0,                   /* MTLResourceStorageModeShared */
    TJ_MTL_PIPELINE_NONE = 0,                    /* MTLPipelineOptionNone */
    TJ_MTL_PIPELINE_FAIL_ON_ARCHIVE_MISS = 1 << 2, /* MTLPipelineOptionFailOnBinaryArchiveMiss */
    TJ_MTL_LANGUAGE_3_0 = (3 << 16) + 0,         /* MTLLanguageVersion3_0 */
    TJ_MTL_LANGUAGE_3_1 = (3 << 16) + 1,         /* MTLLanguageVersion3_1 (bfloat) */
    TJ_MTL_COMMAND_BUFFER_COMPLETED = 4,         /* MTLCommandBufferStatusCompleted */
};

id objc_getClass(const char *name); /* a Class; an id suffices to message it */
SEL sel_registerName(const char *name);
/* Declared without a prototype's types, as with OBJC_OLD_DISPATCH_PROTOTYPES=0:
 * every call casts it to the exact type of the message (TJ_MSG). */
void objc_msgSend(void);
void *objc_autoreleasePoolPush(void);
void objc_autoreleasePoolPop(void *pool);
id MTLCreateSystemDefaultDevice(void);

/* TJ_MSG(RET, ARGS...)(receiver, selector, args...): objc_msgSend as a
 * function of exactly that type (arm64 passes variadic arguments on the
 * stack, so an uncast call would be wrong). Through a function returning
 * the pointer, as void (*)(void), which converts to any function pointer
 * type without a warning. */
static inline void (*tj_objc_send(void))(void) { return objc_msgSend; }
#define TJ_MSG(RET, ...) ((RET(*)(id, SEL, __VA_ARGS__))tj_objc_send())
#define TJ_MSG0(RET) ((RET(*)(id, SEL))tj_objc_send())

#endif
