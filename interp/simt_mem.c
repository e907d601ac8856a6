/* Global and shared memory of the SIMT interpreter, and atomics.
 *
 * A global address must lie, with all the bytes it accesses, inside one
 * tensor argument and be aligned as the GPU requires (the access size,
 * 16 bytes at most); anything else means the lowering is wrong and is
 * reported, as is a read of shared memory no thread has written in the
 * program (a missing store). Threads go in order, so among duplicate
 * store targets the highest thread wins, and atomics see each other in
 * thread order. */
#include <string.h>

#include "interp/simt.h"

enum { SHARED_MAX_BYTES = 16 * 8 }; /* a store of the widest SIMT vector (simt.c: 16 elements) of 8-byte ones */

/* The access size's alignment, as PTX requires: the whole vector up to 16
 * bytes (larger vectors go in 16-byte pieces). */
static uint32_t alignment(uint32_t bytes)
{
    uint32_t a = 1;
    while (a < bytes && a < 16 && !(bytes % (a * 2)))
        a *= 2;
    return a;
}

unsigned char *tj_simt_global_bytes(tj_simt *s, tj_ref r, uint32_t t, uint64_t addr, uint32_t bytes)
{
    if (addr % alignment(bytes))
        return tj_simt_fail(s, r, t, "address 0x%llx is not aligned to %u bytes", (unsigned long long)addr,
                            alignment(bytes)), NULL;
    uint32_t n = s->st.k->nparams;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (s->last_tensor + k) % n;
        const tj_simt_extent *e = &s->extent[i];
        if (addr >= e->lo && addr < e->hi && bytes <= e->hi - addr) {
            s->last_tensor = i;
            return (unsigned char *)(uintptr_t)addr;
        }
    }
    return tj_simt_fail(s, r, t, "%u bytes at 0x%llx are outside every tensor argument", bytes,
                        (unsigned long long)addr), NULL;
}

/* Operand a of r: its rval (NULL when absent). */
static const tj_rval *operand(const tj_simt *s, tj_ref r, uint32_t a)
{
    const tj_inst *in = &s->st.k->insts[r];
    return a < in->nargs && in->args[a] ? &s->st.vals[in->args[a]] : NULL;
}

/* Checks an operand is a scalar (per thread) of dtype dt. */
static int scalar_of(const tj_simt *s, tj_ref r, uint32_t a, const tj_rval *v, tj_dtype dt, tj_dtype also)
{
    if (!v || !v->data || v->n != s->nthreads || (v->dt != dt && v->dt != also))
        return tj_simt_fail(s, r, -1, "operand %u must be a %s scalar", a, tj_dtype_name(dt));
    return 0;
}

int tj_simt_load_global(tj_simt *s, tj_ref r)
{
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *addr = operand(s, r, 0), *pred = operand(s, r, 1), *other = operand(s, r, 2);
    uint32_t w = tj_simt_width(s, r), size = (uint32_t)tj_dtype_size(rv->dt);
    if (scalar_of(s, r, 0, addr, TJ_DT_U64, TJ_DT_U64) || (pred && scalar_of(s, r, 1, pred, TJ_DT_BOOL, TJ_DT_BOOL)))
        return -1;
    if (other && (!other->data || other->dt != rv->dt || (other->n != rv->n && other->n != s->nthreads)))
        return tj_simt_fail(s, r, -1, "`other` must be a %s scalar or a value of the result's type",
                            tj_dtype_name(rv->dt));
    uint32_t ow = other ? other->n / s->nthreads : 0;
    for (uint32_t t = 0; t < s->nthreads; t++) {
        tj_slot *d = &rv->data[t * w];
        if (pred && !pred->data[t].i) {
            for (uint32_t e = 0; e < w; e++)
                d[e] = other ? other->data[t * ow + (ow == 1 ? 0 : e)] : (tj_slot){.u = 0};
            continue;
        }
        const unsigned char *p = tj_simt_global_bytes(s, r, t, addr->data[t].u, w * size);
        if (!p)
            return -1;
        for (uint32_t e = 0; e < w; e++)
            d[e] = tj_mem_read(rv->dt, p + e * size, 0);
    }
    return 0;
}

int tj_simt_store_global(tj_simt *s, tj_ref r)
{
    const tj_rval *addr = operand(s, r, 0), *val = operand(s, r, 1), *pred = operand(s, r, 2);
    if (scalar_of(s, r, 0, addr, TJ_DT_U64, TJ_DT_U64) || (pred && scalar_of(s, r, 2, pred, TJ_DT_BOOL, TJ_DT_BOOL)))
        return -1;
    if (!val || !val->data)
        return tj_simt_fail(s, r, -1, "the stored value must be a scalar or a vector");
    uint32_t w = val->n / s->nthreads, size = (uint32_t)tj_dtype_size(val->dt);
    for (uint32_t t = 0; t < s->nthreads; t++) {
        if (pred && !pred->data[t].i)
            continue;
        unsigned char *p = tj_simt_global_bytes(s, r, t, addr->data[t].u, w * size);
        if (!p)
            return -1;
        for (uint32_t e = 0; e < w; e++)
            tj_mem_write(val->dt, p + e * size, 0, val->data[t * w + e]);
    }
    s->st.writes++;
    return 0;
}

/* Read, combine, write back, thread after thread; the result is the old
 * value (0 where the predicate is off). */
int tj_simt_atomic(tj_simt *s, tj_ref r)
{
    const tj_inst *in = &s->st.k->insts[r];
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *addr = operand(s, r, 0), *val = operand(s, r, 1), *pred = operand(s, r, 2);
    if (scalar_of(s, r, 0, addr, TJ_DT_U64, TJ_DT_U64) || (pred && scalar_of(s, r, 2, pred, TJ_DT_BOOL, TJ_DT_BOOL)) ||
        scalar_of(s, r, 1, val, rv->dt, rv->dt) || !rv->data || rv->n != s->nthreads)
        return -1;
    tj_op op = in->op == TJ_OP_ATOM_ADD ? TJ_OP_ADD : in->op == TJ_OP_ATOM_MAX ? TJ_OP_MAX : TJ_OP_MIN;
    uint32_t size = (uint32_t)tj_dtype_size(rv->dt);
    for (uint32_t t = 0; t < s->nthreads; t++) {
        rv->data[t].u = 0;
        if (pred && !pred->data[t].i)
            continue;
        unsigned char *p = tj_simt_global_bytes(s, r, t, addr->data[t].u, size);
        if (!p)
            return -1;
        tj_slot old = tj_mem_read(rv->dt, p, 0), now;
        if (tj_binary_slots(op, rv->dt, &now, &old, &val->data[t], 1))
            return tj_simt_fail(s, r, -1, "no atomic %s on %s", tj_op_get(op)->name, tj_dtype_name(rv->dt));
        tj_mem_write(rv->dt, p, 0, now);
        rv->data[t] = old;
    }
    s->st.writes++;
    return 0;
}

int tj_simt_shared_range(const tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t bytes)
{
    uint32_t size = s->st.k->smem_bytes;
    if (off > size || bytes > size - off)
        return tj_simt_fail(s, r, t, "shared bytes [%llu, %llu) are outside the %u bytes of shared memory",
                            (unsigned long long)off, (unsigned long long)off + bytes, size);
    if (off % alignment(bytes))
        return tj_simt_fail(s, r, t, "shared address %llu is not aligned to %u bytes", (unsigned long long)off,
                            alignment(bytes));
    return 0;
}

/* The warps of a program run in lockstep here but not on a GPU: between
 * two barriers of all warps (an epoch) one warp's write and another's
 * read or write of the same byte may come in either order there. A read
 * of a byte another warp wrote in this epoch (its own warp not among the
 * writers: replicas store the same values) or a write over a byte another
 * warp read in it is reported; accesses within a warp, atomics, copies and
 * the tensor cores' reads are not checked, and named barriers and
 * mbarriers start a new epoch (they order some warps, which is not
 * modelled), so it misses races rather than report ordered accesses. */
int tj_simt_shared_access(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t bytes, const unsigned char *data)
{
    int write = data != NULL;
    uint64_t bit = 1ull << (t / 32 % 64);
    uint32_t *mine = write ? s->smem_wepoch : s->smem_repoch, *theirs = write ? s->smem_repoch : s->smem_wepoch;
    uint64_t *marks = write ? s->smem_writers : s->smem_readers, *others = write ? s->smem_readers : s->smem_writers;
    for (uint64_t b = off; b < off + bytes; b++) {
        if (write && s->smem_set[b] && s->smem[b] == data[b - off])
            continue; /* a store of what is there: every order reads the same */
        uint64_t seen = theirs[b] == s->epoch ? others[b] : 0;
        if (seen & ~bit && (write || !(seen & bit))) {
            int w = __builtin_ctzll(seen & ~bit);
            return tj_simt_fail(s, r, t, "%s shared byte %llu, which warp %d %s with no barrier between (a race: a "
                                "missing barrier?)", write ? "writes" : "reads", (unsigned long long)b, w,
                                write ? "read" : "wrote");
        }
        marks[b] = mine[b] == s->epoch ? marks[b] | bit : bit;
        mine[b] = s->epoch;
    }
    return 0;
}

/* Whether thread t may read shared bytes [off, off + bytes): written in
 * this program, and not landed by another thread's copy since the last
 * barrier (simt_async.c). */
static int shared_written(const tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t bytes)
{
    for (uint32_t b = 0; b < bytes; b++) {
        if (!s->smem_set[off + b])
            return tj_simt_fail(s, r, t,
                                "reads shared byte %llu, which no thread has written in this program "
                                "(a missing store?)",
                                (unsigned long long)off + b);
        uint16_t by = s->smem_landed[off + b];
        if (by && by != t + 1)
            return tj_simt_fail(s, r, t,
                                "reads shared byte %llu, which thread %u's asynchronous copy landed with no "
                                "barrier since (a missing barrier after cp_async_wait?)",
                                (unsigned long long)off + b, by - 1u);
    }
    return 0;
}

int tj_simt_shared_peek(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot *out)
{
    uint32_t size = (uint32_t)tj_dtype_size(dt);
    if (tj_simt_shared_range(s, r, t, off, size) || shared_written(s, r, t, off, size))
        return -1;
    *out = tj_mem_read(dt, s->smem + off, 0);
    return 0;
}

int tj_simt_shared_get(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot *out)
{
    if (tj_simt_shared_peek(s, r, t, off, dt, out))
        return -1;
    return tj_simt_shared_access(s, r, t, off, (uint32_t)tj_dtype_size(dt), NULL);
}

int tj_simt_shared_put(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot v)
{
    uint32_t size = (uint32_t)tj_dtype_size(dt);
    unsigned char bytes[sizeof(tj_slot)];
    tj_mem_write(dt, bytes, 0, v);
    if (tj_simt_shared_range(s, r, t, off, size) || tj_simt_wgmma_guard(s, r, t, off, size) ||
        tj_simt_shared_access(s, r, t, off, size, bytes))
        return -1;
    memcpy(s->smem + off, bytes, size);
    memset(s->smem_set + off, 1, size);
    memset(s->smem_landed + off, 0, sizeof *s->smem_landed * size); /* a store's bytes are the store's */
    return 0;
}

int tj_simt_load_shared(tj_simt *s, tj_ref r)
{
    tj_rval *rv = &s->st.vals[r];
    const tj_rval *addr = operand(s, r, 0);
    uint32_t w = tj_simt_width(s, r), size = (uint32_t)tj_dtype_size(rv->dt);
    if (scalar_of(s, r, 0, addr, TJ_DT_U32, TJ_DT_I32))
        return -1;
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint64_t off = (uint32_t)addr->data[t].u;
        if (tj_simt_shared_range(s, r, t, off, w * size) || shared_written(s, r, t, off, w * size) ||
            tj_simt_shared_access(s, r, t, off, w * size, NULL))
            return -1;
        for (uint32_t e = 0; e < w; e++)
            rv->data[t * w + e] = tj_mem_read(rv->dt, s->smem + off + e * size, 0);
    }
    return 0;
}

/* red_add_shared: each thread in turn adds its value to the u32 at its
 * address (atomic: the sum does not depend on the order) */
int tj_simt_red_add_shared(tj_simt *s, tj_ref r)
{
    const tj_rval *addr = operand(s, r, 0), *val = operand(s, r, 1);
    if (scalar_of(s, r, 0, addr, TJ_DT_U32, TJ_DT_I32) || scalar_of(s, r, 1, val, TJ_DT_U32, TJ_DT_U32))
        return -1;
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint64_t off = (uint32_t)addr->data[t].u;
        tj_slot old;
        if (tj_simt_shared_peek(s, r, t, off, TJ_DT_U32, &old) || tj_simt_wgmma_guard(s, r, t, off, 4))
            return -1; /* atomic: no race with the other warps' additions */
        tj_mem_write(TJ_DT_U32, s->smem + off, 0, (tj_slot){.u = (uint32_t)(old.u + val->data[t].u)});
        memset(s->smem_landed + off, 0, sizeof *s->smem_landed * 4);
    }
    return 0;
}

int tj_simt_store_shared(tj_simt *s, tj_ref r)
{
    const tj_rval *addr = operand(s, r, 0), *val = operand(s, r, 1);
    if (scalar_of(s, r, 0, addr, TJ_DT_U32, TJ_DT_I32))
        return -1;
    if (!val || !val->data)
        return tj_simt_fail(s, r, -1, "the stored value must be a scalar or a vector");
    uint32_t w = val->n / s->nthreads, size = (uint32_t)tj_dtype_size(val->dt);
    for (uint32_t t = 0; t < s->nthreads; t++) {
        uint64_t off = (uint32_t)addr->data[t].u;
        unsigned char bytes[SHARED_MAX_BYTES];
        if (w * size > sizeof bytes)
            return tj_simt_fail(s, r, t, "stores %u bytes at once, more than %zu", w * size, sizeof bytes);
        for (uint32_t e = 0; e < w; e++)
            tj_mem_write(val->dt, bytes + e * size, 0, val->data[t * w + e]);
        if (tj_simt_shared_range(s, r, t, off, w * size) || tj_simt_wgmma_guard(s, r, t, off, w * size) ||
            tj_simt_shared_access(s, r, t, off, w * size, bytes))
            return -1;
        memcpy(s->smem + off, bytes, w * size);
        memset(s->smem_set + off, 1, w * size);
        memset(s->smem_landed + off, 0, sizeof *s->smem_landed * w * size);
    }
    return 0;
}
