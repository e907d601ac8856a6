/* tilejit contexts and diagnostics.
 *
 * A tj_ctx owns everything one compilation allocates (an arena), the interned
 * types, the source texts, and the diagnostics reported so far. Nothing in the
 * library is global: threads use one context each.
 */
#ifndef TILEJIT_DIAG_H
#define TILEJIT_DIAG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tj_ctx tj_ctx;
struct tj_loc;

typedef enum tj_severity { TJ_SEV_ERROR, TJ_SEV_WARNING, TJ_SEV_NOTE } tj_severity;

typedef struct tj_diag {
    tj_severity sev;
    uint32_t file; /* source index (0: none) */
    uint32_t line, col; /* 1-based; 0: unknown */
    const char *msg;
} tj_diag;

tj_ctx *tj_ctx_new(void);  /* NULL when out of memory */
void tj_ctx_free(tj_ctx *c);

/* Arena memory: zeroed, 16-byte aligned, freed with the context. Inside
 * tj_guarded (every entry point of the library runs there) out of memory
 * unwinds to the guard and these never return NULL (only a NULL context, or
 * a NULL string to copy, gives NULL). Outside a guard (an embedder calling
 * the IR builder directly) they return NULL and count an error; the builder
 * calls then fail as they do on bad arguments (NULL, TJ_NONE, 0). */
void *tj_alloc(tj_ctx *c, size_t size);
void *tj_realloc(tj_ctx *c, void *old, size_t old_size, size_t new_size);
/* Grows an arena array of elem-sized items to hold at least `need` (the
 * capacity doubles); returns it, maybe moved. */
void *tj_grow(tj_ctx *c, void *arr, uint32_t *cap, uint32_t need, size_t elem);
/* The same for a malloc'ed array (objects that outlive a context): NULL
 * when out of memory, arr then unchanged and still the caller's. */
void *tj_heap_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem);
/* tj_heap_grow in place: *arr grown to hold `need`; 0, or 1 when out of
 * memory (*arr then unchanged). */
int tj_heap_grow_in_place(void **arr, uint32_t *cap, uint32_t need, size_t elem);
char *tj_strndup(tj_ctx *c, const char *s, size_t n);
char *tj_strdup(tj_ctx *c, const char *s);

/* Registers a source text (copied, NUL-terminated) so diagnostics can quote
 * it; returns its index (>= 1), or 0 for a NULL context or NULL text of
 * len > 0. */
uint32_t tj_source_add(tj_ctx *c, const char *name, const char *text, size_t len);
const char *tj_source_name(const tj_ctx *c, uint32_t file);
const char *tj_source_text(const tj_ctx *c, uint32_t file, size_t *len);

void tj_diag_report(tj_ctx *c, tj_severity sev, uint32_t file, uint32_t line,
                    uint32_t col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
#define tj_error_at(c, loc, ...) tj_diag_report((c), TJ_SEV_ERROR, (loc).file, (loc).line, (loc).col, __VA_ARGS__)
#define tj_error(c, ...) tj_diag_report((c), TJ_SEV_ERROR, 0, 0, 0, __VA_ARGS__)

/* A NULL context or format reports nothing; these queries read a NULL
 * context as one without diagnostics (tj_diag_render: ""). */
uint32_t tj_diag_count(const tj_ctx *c);
uint32_t tj_error_count(const tj_ctx *c);
const tj_diag *tj_diag_get(const tj_ctx *c, uint32_t i);
void tj_diag_clear(tj_ctx *c);
/* Drops the diagnostics after the first n (an attempt that is retried). */
void tj_diag_truncate(tj_ctx *c, uint32_t n);
/* Renders every diagnostic as `file:line:col: error: msg`, followed by the
 * source line and a caret where the location is known. Returns a string in
 * the context's arena. */
const char *tj_diag_render(tj_ctx *c);

/* An error message for entry points that have no context to report into
 * (the runtime: devices, the cache, the JIT). */
typedef struct tj_rt_error {
    char msg[512];
} tj_rt_error;

/* ---- argument checks ----
 * Every public entry point refuses unusable arguments (NULL handles and
 * out-parameters, NULL arrays with a count above 0, enums and sizes out of
 * range) with its error value before it does anything: the message goes
 * into its tj_rt_error when it takes one, else into its context's
 * diagnostics ("FUNCTION: what is wrong"), else the error value alone says
 * so (the header comment names it). */

/* printf into err->msg (truncating); returns 1 so callers can
 * `return tj_rt_fail(err, ...)`. err may be NULL. */
int tj_rt_fail(tj_rt_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Whether an array argument of n items is usable: NULL only when empty. */
static inline int tj_array_ok(const void *a, uint64_t n) { return a != NULL || n == 0; }

/* Out-of-memory recovery: the library's entry points run their work
 * through tj_guarded, so that an allocation failure below them unwinds
 * there with a diagnostic instead of aborting. tj_guarded runs fn(arg)
 * with the guard set (guards nest) and returns what fn returns, or -1
 * after an allocation failure unwound it, with an "out of memory" error
 * (what fn built in the arena may then be unusable). */
int tj_guarded(tj_ctx *c, int (*fn)(void *arg), void *arg);
/* The guard itself (tj_guarded's): sets jb, returns the outer one. */
#include <setjmp.h>
jmp_buf *tj_ctx_swap_guard(tj_ctx *c, jmp_buf *jb);

#ifdef __cplusplus
}
#endif
#endif
