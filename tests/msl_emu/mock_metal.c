/* The Foundation and Metal classes of the mock Objective-C runtime
 * (mock_objc.c). A library is MSL compiled by the emulator; a command
 * buffer runs its dispatch in the emulator on commit. A binary archive is
 * a text file listing the pipelines added to it (function name and a hash
 * of its library's source); a pipeline asked for with "fail on archive
 * miss" exists only if its archive lists it. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_objc_internal.h"

static atomic_long n_compiles, n_fast_math, n_msl_3_1, n_msl_3_1_unneeded, n_archive_reads, n_copies, n_dispatches,
    n_libraries;
static atomic_int refuse_nocopy;

static const char archive_magic[] = "mock binary archive\n";

/* ---- objects ---------------------------------------------------------------------------- */

typedef struct NSStr { obj o; char *s; } NSStr;
typedef struct NSErr { obj o; char *msg; } NSErr;
typedef struct NSURLo { obj o; char *path; } NSURLo;
typedef struct NSArr { obj o; id item; } NSArr;
typedef struct Options { obj o; int fast_math; NSUInteger language; } Options;
typedef struct Device { obj o; id name; } Device;
typedef struct Library { obj o; void *so; unsigned long hash; } Library;
typedef struct Function { obj o; mtl_emu_entry entry; char *name; unsigned long hash; id library; } Function;
typedef struct PipeDesc { obj o; id fn, archives; } PipeDesc;
typedef struct Pipeline { obj o; mtl_emu_entry entry; id function; } Pipeline; /* they keep their code alive */
typedef struct ArchDesc { obj o; char *path; } ArchDesc;
typedef struct Archive { obj o; char *entries; } Archive;
typedef struct Buffer { obj o; unsigned char *p; size_t n; int owns; } Buffer;
typedef struct CmdBuf {
    obj o;
    mtl_emu_dispatch_desc d;
    mtl_emu_entry entry;
    int dispatched, ended, committed;
    NSUInteger status;
    id error;
    unsigned char bytes[MTL_EMU_MAX_BUFFERS][4096];
} CmdBuf;
typedef struct Encoder { obj o; CmdBuf *cb; } Encoder;

#define AS(T, x) ((T *)(void *)(x))

static void str_dealloc(id s) { free(AS(NSStr, s)->s); }
static void err_dealloc(id s) { free(AS(NSErr, s)->msg); }
static void url_dealloc(id s) { free(AS(NSURLo, s)->path); }
static void arr_dealloc(id s) { mock_release_if(AS(NSArr, s)->item); }
static void dev_dealloc(id s) { mock_release_if(AS(Device, s)->name); }
static void lib_dealloc(id s) { dlclose(AS(Library, s)->so); }
static void fn_dealloc(id s)
{
    free(AS(Function, s)->name);
    mock_release_if(AS(Function, s)->library);
}
static void pso_dealloc(id s) { mock_release_if(AS(Pipeline, s)->function); }
static void pdesc_dealloc(id s)
{
    mock_release_if(AS(PipeDesc, s)->fn);
    mock_release_if(AS(PipeDesc, s)->archives);
}
static void adesc_dealloc(id s) { free(AS(ArchDesc, s)->path); }
static void arch_dealloc(id s) { free(AS(Archive, s)->entries); }
static void buf_dealloc(id s)
{
    if (AS(Buffer, s)->owns)
        free(AS(Buffer, s)->p);
}
static void cb_dealloc(id s) { mock_release_if(AS(CmdBuf, s)->error); }

extern const mclass K_NSString, K_NSError, K_NSURL, K_NSArray, K_Options, K_Device, K_Library, K_Function,
    K_PipeDesc, K_Pipeline, K_ArchDesc, K_Archive, K_Queue, K_CmdBuf, K_Encoder, K_Buffer;

static id new_string(const char *s)
{
    id o = mock_make(&K_NSString, sizeof(NSStr));
    AS(NSStr, o)->s = strdup(s);
    return o;
}

static id new_error(const char *msg)
{
    id o = mock_make(&K_NSError, sizeof(NSErr));
    AS(NSErr, o)->msg = strdup(msg);
    return o;
}

static void set_error(id *err, const char *msg)
{
    if (err)
        *err = mock_autoreleased(new_error(msg));
}

static unsigned long hash(const char *s)
{
    unsigned long h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

/* ---- Foundation ------------------------------------------------------------------------- */

static id str_with(id cls, SEL s, const char *c)
{
    (void)cls, (void)s;
    return mock_autoreleased(new_string(c));
}
static const char *str_utf8(id self, SEL s) { return (void)s, AS(NSStr, self)->s; }
static id err_desc(id self, SEL s) { return (void)s, mock_autoreleased(new_string(AS(NSErr, self)->msg)); }
static id url_with_path(id cls, SEL s, id path)
{
    (void)cls, (void)s;
    id o = mock_make(&K_NSURL, sizeof(NSURLo));
    AS(NSURLo, o)->path = strdup(AS(NSStr, path)->s);
    return mock_autoreleased(o);
}
static id arr_with(id cls, SEL s, id item)
{
    (void)cls, (void)s;
    id o = mock_make(&K_NSArray, sizeof(NSArr));
    mock_retain(item);
    AS(NSArr, o)->item = item;
    return mock_autoreleased(o);
}

/* ---- compile options, library, function ----------------------------------------------------- */

static id opts_alloc(id cls, SEL s) { return (void)cls, (void)s, mock_make(&K_Options, sizeof(Options)); }
static id self_(id self, SEL s) { return (void)s, self; }
static void opts_fast_math(id self, SEL s, tj_objc_bool on) { (void)s, AS(Options, self)->fast_math = on != 0; }
static void opts_language(id self, SEL s, NSUInteger v) { (void)s, AS(Options, self)->language = v; }

enum { MSL_3_0 = 3 << 16, MSL_3_1 = (3 << 16) + 1 }; /* MTLLanguageVersion */

/* What the compile refuses for the language version asked for (the
 * emulator itself takes any source): the bfloat type before MSL 3.1, as
 * Apple's compiler does; and, to hold the runtime to its rule, any version
 * but 3.0 and 3.1 (options whose version was never set included). */
static const char *language_error(NSUInteger language, const char *text)
{
    if (language != MSL_3_0 && language != MSL_3_1)
        return "mock: a language version other than MSL 3.0 and 3.1";
    if (language == MSL_3_0 && strstr(text, "bfloat"))
        return "mock: error: unknown type name 'bfloat' (bfloat needs MSL 3.1)";
    return NULL;
}

static id dev_new_library(id self, SEL s, id src, id opts, id *err)
{
    (void)self, (void)s;
    atomic_fetch_add(&n_compiles, 1);
    if (!opts || AS(Options, opts)->fast_math)
        atomic_fetch_add(&n_fast_math, 1);
    const char *text = AS(NSStr, src)->s, *work = getenv("MTL_EMU_WORK");
    const char *refused = language_error(opts ? AS(Options, opts)->language : MSL_3_0, text);
    if (refused) {
        set_error(err, refused);
        return NULL;
    }
    if (opts && AS(Options, opts)->language == MSL_3_1) {
        atomic_fetch_add(&n_msl_3_1, 1);
        if (!strstr(text, "bfloat"))
            atomic_fetch_add(&n_msl_3_1_unneeded, 1);
    }
    char so[512], log[16384];
    snprintf(so, sizeof so, "%s/mock_library.%d.%ld.so", work ? work : "/tmp", (int)getpid(),
             atomic_fetch_add(&n_libraries, 1));
    if (mtl_emu_compile(&text, 1, so, log, sizeof log)) {
        set_error(err, log);
        return NULL;
    }
    void *h = mtl_emu_open(so, log, sizeof log);
    unlink(so);
    if (!h) {
        set_error(err, log);
        return NULL;
    }
    id o = mock_make(&K_Library, sizeof(Library));
    AS(Library, o)->so = h;
    AS(Library, o)->hash = hash(text);
    return o;
}

static id lib_new_function(id self, SEL s, id name)
{
    (void)s;
    mtl_emu_entry e = mtl_emu_lookup(AS(Library, self)->so, 0, AS(NSStr, name)->s);
    if (!e)
        return NULL;
    id o = mock_make(&K_Function, sizeof(Function));
    AS(Function, o)->entry = e;
    AS(Function, o)->name = strdup(AS(NSStr, name)->s);
    AS(Function, o)->hash = AS(Library, self)->hash;
    mock_retain(self);
    AS(Function, o)->library = self;
    return o;
}

/* ---- pipelines and binary archives ------------------------------------------------------------ */

static id pdesc_new(id cls, SEL s) { return (void)cls, (void)s, mock_make(&K_PipeDesc, sizeof(PipeDesc)); }
static void pdesc_set_fn(id self, SEL s, id fn)
{
    (void)s;
    mock_retain(fn);
    mock_release_if(AS(PipeDesc, self)->fn);
    AS(PipeDesc, self)->fn = fn;
}
static void pdesc_set_archives(id self, SEL s, id arr)
{
    (void)s;
    mock_retain(arr);
    mock_release_if(AS(PipeDesc, self)->archives);
    AS(PipeDesc, self)->archives = arr;
}

/* "name hash\n": the archive entry of a descriptor's function. */
static void entry_of(id desc, char *buf, size_t cap)
{
    Function *f = AS(Function, AS(PipeDesc, desc)->fn);
    snprintf(buf, cap, "%s %lx\n", f->name, f->hash);
}

static id dev_new_pipeline(id self, SEL s, id desc, NSUInteger options, void *reflection, id *err)
{
    (void)self, (void)s, (void)reflection;
    if (!AS(PipeDesc, desc)->fn)
        mock_fatal("a pipeline descriptor without a compute function");
    if (options & TJ_MTL_PIPELINE_FAIL_ON_ARCHIVE_MISS) {
        id arr = AS(PipeDesc, desc)->archives;
        Archive *a = arr ? AS(Archive, AS(NSArr, arr)->item) : NULL;
        char want[256];
        entry_of(desc, want, sizeof want);
        if (!a || !a->entries || !strstr(a->entries, want)) {
            set_error(err, "the pipeline is not in the binary archive");
            return NULL;
        }
    }
    id o = mock_make(&K_Pipeline, sizeof(Pipeline));
    AS(Pipeline, o)->entry = AS(Function, AS(PipeDesc, desc)->fn)->entry;
    mock_retain(AS(PipeDesc, desc)->fn);
    AS(Pipeline, o)->function = AS(PipeDesc, desc)->fn;
    return o;
}
static NSUInteger pso_width(id self, SEL s) { return (void)self, (void)s, MTL_EMU_SIMD_WIDTH; }
static NSUInteger pso_max_threads(id self, SEL s) { return (void)self, (void)s, 1024; }

static id adesc_new(id cls, SEL s) { return (void)cls, (void)s, mock_make(&K_ArchDesc, sizeof(ArchDesc)); }
static void adesc_set_url(id self, SEL s, id url)
{
    (void)s;
    free(AS(ArchDesc, self)->path);
    AS(ArchDesc, self)->path = strdup(AS(NSURLo, url)->path);
}

static id dev_new_archive(id self, SEL s, id desc, id *err)
{
    (void)self, (void)s;
    char *text = NULL;
    const char *path = AS(ArchDesc, desc)->path;
    if (path) {
        FILE *f = fopen(path, "rb");
        size_t n = 0;
        text = calloc(1, 65536);
        if (f) {
            n = fread(text, 1, 65535, f);
            fclose(f);
        }
        if (!f || n < sizeof archive_magic - 1 || memcmp(text, archive_magic, sizeof archive_magic - 1)) {
            free(text);
            set_error(err, "not a binary archive");
            return NULL;
        }
        atomic_fetch_add(&n_archive_reads, 1);
    }
    id o = mock_make(&K_Archive, sizeof(Archive));
    AS(Archive, o)->entries = text ? text : strdup(archive_magic);
    return o;
}

static tj_objc_bool arch_add(id self, SEL s, id desc, id *err)
{
    (void)s, (void)err;
    Archive *a = AS(Archive, self);
    char line[256];
    entry_of(desc, line, sizeof line);
    size_t n = strlen(a->entries);
    a->entries = realloc(a->entries, n + strlen(line) + 1);
    strcpy(a->entries + n, line);
    return 1;
}

static tj_objc_bool arch_serialize(id self, SEL s, id url, id *err)
{
    (void)s;
    FILE *f = fopen(AS(NSURLo, url)->path, "wb");
    const char *t = AS(Archive, self)->entries;
    if (!f || fwrite(t, 1, strlen(t), f) != strlen(t) || fclose(f)) {
        set_error(err, "cannot write the archive");
        return 0;
    }
    return 1;
}

/* ---- device, buffers ------------------------------------------------------------------------ */

id MTLCreateSystemDefaultDevice(void)
{
    id d = mock_make(&K_Device, sizeof(Device));
    AS(Device, d)->name = new_string("Mock Metal device (the MSL emulator)");
    return d;
}
static id dev_name(id self, SEL s) { return (void)s, AS(Device, self)->name; }
static id dev_new_queue(id self, SEL s) { return (void)self, (void)s, mock_make(&K_Queue, sizeof(obj)); }

/* Metal wraps page-aligned memory only. */
static id dev_buffer_nocopy(id self, SEL s, void *p, NSUInteger n, NSUInteger opts, void *deallocator)
{
    (void)self, (void)s, (void)opts, (void)deallocator;
    long page = sysconf(_SC_PAGESIZE);
    if (atomic_load(&refuse_nocopy) || (uintptr_t)p % (uintptr_t)page || n % (NSUInteger)page)
        return NULL;
    id o = mock_make(&K_Buffer, sizeof(Buffer));
    AS(Buffer, o)->p = p;
    AS(Buffer, o)->n = n;
    return o;
}
static id dev_buffer_copy(id self, SEL s, const void *p, NSUInteger n, NSUInteger opts)
{
    (void)self, (void)s, (void)opts;
    atomic_fetch_add(&n_copies, 1);
    id o = mock_make(&K_Buffer, sizeof(Buffer));
    AS(Buffer, o)->p = malloc(n ? n : 1);
    memcpy(AS(Buffer, o)->p, p, n);
    AS(Buffer, o)->n = n;
    AS(Buffer, o)->owns = 1;
    return o;
}
static void *buf_contents(id self, SEL s) { return (void)s, AS(Buffer, self)->p; }

/* ---- command buffers and encoders --------------------------------------------------------------- */

static id queue_cb(id self, SEL s)
{
    (void)self, (void)s;
    return mock_autoreleased(mock_make(&K_CmdBuf, sizeof(CmdBuf)));
}
static id cb_encoder(id self, SEL s)
{
    (void)s;
    id e = mock_make(&K_Encoder, sizeof(Encoder));
    AS(Encoder, e)->cb = AS(CmdBuf, self);
    return mock_autoreleased(e);
}
static CmdBuf *open_cb(id enc)
{
    CmdBuf *cb = AS(Encoder, enc)->cb;
    if (cb->ended)
        mock_fatal("an encoder used after endEncoding");
    return cb;
}
static void enc_pipeline(id self, SEL s, id pso) { (void)s, open_cb(self)->entry = AS(Pipeline, pso)->entry; }
static void enc_buffer(id self, SEL s, id buf, NSUInteger off, NSUInteger i)
{
    (void)s;
    if (i >= MTL_EMU_MAX_BUFFERS || off > AS(Buffer, buf)->n)
        mock_fatal("setBuffer: index %lu or offset %lu out of range", (unsigned long)i, (unsigned long)off);
    open_cb(self)->d.buffers[i] = AS(Buffer, buf)->p + off;
}
static void enc_bytes(id self, SEL s, const void *p, NSUInteger n, NSUInteger i)
{
    (void)s;
    CmdBuf *cb = open_cb(self);
    if (i >= MTL_EMU_MAX_BUFFERS || n > sizeof cb->bytes[0])
        mock_fatal("setBytes: index %lu or length %lu over the limit (4 KiB)", (unsigned long)i, (unsigned long)n);
    memcpy(cb->bytes[i], p, n);
    cb->d.buffers[i] = cb->bytes[i];
}
static void enc_dispatch(id self, SEL s, MTLSize groups, MTLSize threads)
{
    (void)s;
    CmdBuf *cb = open_cb(self);
    if (!cb->entry)
        mock_fatal("a dispatch with no pipeline state");
    cb->d.threadgroups[0] = (uint32_t)groups.width;
    cb->d.threadgroups[1] = (uint32_t)groups.height;
    cb->d.threadgroups[2] = (uint32_t)groups.depth;
    cb->d.threads[0] = (uint32_t)threads.width;
    cb->d.threads[1] = (uint32_t)threads.height;
    cb->d.threads[2] = (uint32_t)threads.depth;
    cb->d.workers = 2;
    cb->dispatched = 1;
}
static void enc_end(id self, SEL s) { (void)s, open_cb(self)->ended = 1; }

static void cb_commit(id self, SEL s)
{
    (void)s;
    CmdBuf *cb = AS(CmdBuf, self);
    if (!cb->ended || cb->committed)
        mock_fatal("a command buffer committed %s", cb->committed ? "twice" : "before endEncoding");
    cb->committed = 1;
    cb->status = TJ_MTL_COMMAND_BUFFER_COMPLETED;
    char msg[1024];
    if (cb->dispatched) {
        atomic_fetch_add(&n_dispatches, 1);
        if (mtl_emu_dispatch(cb->entry, &cb->d, msg, sizeof msg)) {
            cb->status = 5; /* MTLCommandBufferStatusError */
            cb->error = new_error(msg);
        }
    }
}
static void cb_wait(id self, SEL s)
{
    (void)s;
    if (!AS(CmdBuf, self)->committed)
        mock_fatal("waitUntilCompleted before commit");
}
static NSUInteger cb_status(id self, SEL s) { return (void)s, AS(CmdBuf, self)->status; }
static id cb_error(id self, SEL s) { return (void)s, AS(CmdBuf, self)->error; }

/* ---- classes ------------------------------------------------------------------------------ */

#define M(name, f) {name, (imp)(void (*)(void))f}
static const method m_str_class[] = {M("stringWithUTF8String:", str_with), {0, 0}};
static const method m_str[] = {M("UTF8String", str_utf8), {0, 0}};
static const method m_err[] = {M("localizedDescription", err_desc), {0, 0}};
static const method m_url_class[] = {M("fileURLWithPath:", url_with_path), {0, 0}};
static const method m_arr_class[] = {M("arrayWithObject:", arr_with), {0, 0}};
static const method m_opts_class[] = {M("alloc", opts_alloc), {0, 0}};
static const method m_opts[] = {M("init", self_), M("setFastMathEnabled:", opts_fast_math),
                                M("setLanguageVersion:", opts_language), {0, 0}};
static const method m_dev[] = {M("name", dev_name), M("newCommandQueue", dev_new_queue),
                               M("newLibraryWithSource:options:error:", dev_new_library),
                               M("newComputePipelineStateWithDescriptor:options:reflection:error:", dev_new_pipeline),
                               M("newBinaryArchiveWithDescriptor:error:", dev_new_archive),
                               M("newBufferWithBytesNoCopy:length:options:deallocator:", dev_buffer_nocopy),
                               M("newBufferWithBytes:length:options:", dev_buffer_copy), {0, 0}};
static const method m_lib[] = {M("newFunctionWithName:", lib_new_function), {0, 0}};
static const method m_pdesc_class[] = {M("new", pdesc_new), {0, 0}};
static const method m_pdesc[] = {M("setComputeFunction:", pdesc_set_fn), M("setBinaryArchives:", pdesc_set_archives),
                                 {0, 0}};
static const method m_pso[] = {M("threadExecutionWidth", pso_width),
                               M("maxTotalThreadsPerThreadgroup", pso_max_threads), {0, 0}};
static const method m_adesc_class[] = {M("new", adesc_new), {0, 0}};
static const method m_adesc[] = {M("setUrl:", adesc_set_url), {0, 0}};
static const method m_arch[] = {M("addComputePipelineFunctionsWithDescriptor:error:", arch_add),
                                M("serializeToURL:error:", arch_serialize), {0, 0}};
static const method m_queue[] = {M("commandBuffer", queue_cb), {0, 0}};
static const method m_cb[] = {M("computeCommandEncoder", cb_encoder), M("commit", cb_commit),
                              M("waitUntilCompleted", cb_wait), M("status", cb_status), M("error", cb_error), {0, 0}};
static const method m_enc[] = {M("setComputePipelineState:", enc_pipeline), M("setBuffer:offset:atIndex:", enc_buffer),
                               M("setBytes:length:atIndex:", enc_bytes),
                               M("dispatchThreadgroups:threadsPerThreadgroup:", enc_dispatch),
                               M("endEncoding", enc_end), {0, 0}};
static const method m_buf[] = {M("contents", buf_contents), {0, 0}};

const mclass K_NSString = {"NSString", m_str, str_dealloc}, K_NSError = {"NSError", m_err, err_dealloc},
             K_NSURL = {"NSURL", NULL, url_dealloc}, K_NSArray = {"NSArray", NULL, arr_dealloc},
             K_Options = {"MTLCompileOptions", m_opts, NULL}, K_Device = {"MTLDevice", m_dev, dev_dealloc},
             K_Library = {"MTLLibrary", m_lib, lib_dealloc}, K_Function = {"MTLFunction", NULL, fn_dealloc},
             K_PipeDesc = {"MTLComputePipelineDescriptor", m_pdesc, pdesc_dealloc},
             K_Pipeline = {"MTLComputePipelineState", m_pso, pso_dealloc},
             K_ArchDesc = {"MTLBinaryArchiveDescriptor", m_adesc, adesc_dealloc},
             K_Archive = {"MTLBinaryArchive", m_arch, arch_dealloc}, K_Queue = {"MTLCommandQueue", m_queue, NULL},
             K_CmdBuf = {"MTLCommandBuffer", m_cb, cb_dealloc}, K_Encoder = {"MTLComputeCommandEncoder", m_enc, NULL},
             K_Buffer = {"MTLBuffer", m_buf, buf_dealloc};

/* Class objects: objects whose class holds the class methods. */
static const mclass meta[] = {{"NSString class", m_str_class, NULL},
                              {"NSURL class", m_url_class, NULL},
                              {"NSArray class", m_arr_class, NULL},
                              {"MTLCompileOptions class", m_opts_class, NULL},
                              {"MTLComputePipelineDescriptor class", m_pdesc_class, NULL},
                              {"MTLBinaryArchiveDescriptor class", m_adesc_class, NULL}};
static obj class_objects[] = {{&meta[0], 1}, {&meta[1], 1}, {&meta[2], 1},
                              {&meta[3], 1}, {&meta[4], 1}, {&meta[5], 1}};

id objc_getClass(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof meta / sizeof *meta; i++)
        if (!strncmp(meta[i].name, name, n) && meta[i].name[n] == ' ')
            return (id)&class_objects[i];
    mock_fatal("objc_getClass: no class %s", name);
}

void mock_objc_get_counts(mock_objc_counts *out)
{
    mock_objc_object_counts(&out->live, &out->leaked);
    out->compiles = atomic_load(&n_compiles);
    out->fast_math_on = atomic_load(&n_fast_math);
    out->msl_3_1 = atomic_load(&n_msl_3_1);
    out->msl_3_1_unneeded = atomic_load(&n_msl_3_1_unneeded);
    out->archive_reads = atomic_load(&n_archive_reads);
    out->copies = atomic_load(&n_copies);
    out->dispatches = atomic_load(&n_dispatches);
}

void mock_objc_refuse_nocopy(int refuse) { atomic_store(&refuse_nocopy, refuse); }
