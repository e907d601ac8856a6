/* The arena: sizes that cannot be met report out of memory (through the
 * context's guard) instead of wrapping to a small block. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "tilejit/tilejit.h"

typedef struct alloc_job {
    tj_ctx *c;
    size_t size;
} alloc_job;

static int run_alloc(void *arg)
{
    alloc_job *j = arg;
    return tj_alloc(j->c, j->size) ? 0 : 2; /* 2: NULL instead of an unwind */
}

/* 1 when tj_alloc(c, size) unwound to the guard, which said out of memory. */
static int alloc_fails(tj_ctx *c, size_t size)
{
    uint32_t errors = tj_error_count(c);
    alloc_job j = {c, size};
    int rc = tj_guarded(c, run_alloc, &j);
    cr_assert_neq(rc, 2);
    cr_assert_eq(tj_error_count(c), errors + (rc != 0));
    return rc != 0;
}

Test(ctx_alloc, sizes_that_would_wrap_are_out_of_memory)
{
    tj_ctx *c = tj_ctx_new();
    cr_assert(alloc_fails(c, SIZE_MAX));
    cr_assert(alloc_fails(c, SIZE_MAX - 8));
    cr_assert(alloc_fails(c, SIZE_MAX - 15));
    cr_assert(!alloc_fails(c, 100));
    tj_ctx_free(c);
}

/* It used to double 2^31 to 0 and loop for ever. */
Test(ctx_alloc, growing_past_2_to_the_31_does_not_wrap, .timeout = 10)
{
    tj_ctx *c = tj_ctx_new();
    uint32_t cap = 1u << 31;
    /* elem 0: no memory is touched; only the capacity arithmetic runs. */
    void *arr = tj_grow(c, NULL, &cap, (1u << 31) + 1, 0);
    (void)arr;
    cr_assert_geq(cap, (1u << 31) + 1);
    tj_ctx_free(c);
}

/* Outside every guard (an embedder calling the builder itself) an
 * allocation that cannot be met returns NULL and counts an error: the
 * library never aborts. */
Test(ctx_alloc, unguarded_failure_returns_null)
{
    tj_ctx *c = tj_ctx_new();
    cr_assert_null(tj_alloc(c, SIZE_MAX - 8));
    cr_assert_eq(tj_error_count(c), 1);
    cr_assert_null(tj_strndup(c, "x", SIZE_MAX - 8));
    tj_kernel *k = tj_kernel_new(c, "k");
    cr_assert_not_null(k, "small requests still succeed");
    uint32_t cap = 0;
    cr_assert_null(tj_grow(c, NULL, &cap, UINT32_MAX, SIZE_MAX / 1024));
    cr_assert_eq(cap, 0, "a failed grow keeps the capacity");
    tj_diag_clear(c);
    cr_assert_eq(tj_error_count(c), 0);
    tj_ctx_free(c);
}

/* The heap twin of tj_grow: the array keeps its contents when it moves,
 * and a size that cannot be met leaves both the array and its capacity. */
Test(ctx_alloc, heap_grow_keeps_the_array_on_failure)
{
    uint32_t cap = 0;
    int *arr = tj_heap_grow(NULL, &cap, 3, sizeof *arr);
    cr_assert_not_null(arr);
    cr_assert_geq(cap, 3);
    for (int i = 0; i < 3; i++)
        arr[i] = 10 + i;
    uint32_t before = cap;
    cr_assert_eq(tj_heap_grow(arr, &cap, 2, sizeof *arr), arr, "room enough: the same array");
    cr_assert_null(tj_heap_grow(arr, &cap, UINT32_MAX, SIZE_MAX / 1024));
    cr_assert_eq(cap, before, "a failed grow keeps the capacity");
    int *more = tj_heap_grow(arr, &cap, 1000, sizeof *arr);
    cr_assert_not_null(more);
    cr_assert(more[0] == 10 && more[2] == 12, "the contents moved with the array");
    cr_assert_geq(cap, 1000);
    free(more);
    cr_assert_null(tj_heap_grow(NULL, NULL, 1, 4));
}

/* tj_heap_grow_in_place: 0 and the array grown in *arr, or 1 and *arr kept. */
Test(ctx_alloc, heap_grow_in_place_keeps_the_array_on_failure)
{
    uint32_t cap = 0;
    int *arr = NULL;
    cr_assert_eq(tj_heap_grow_in_place((void **)&arr, &cap, 4, sizeof *arr), 0);
    cr_assert_not_null(arr);
    cr_assert_geq(cap, 4);
    int *kept = arr;
    cr_assert_eq(tj_heap_grow_in_place((void **)&arr, &cap, UINT32_MAX, SIZE_MAX / 1024), 1);
    cr_assert_eq(arr, kept, "a failed grow keeps the array");
    cr_assert_eq(tj_heap_grow_in_place(NULL, &cap, 1, 4), 1);
    free(arr);
}
