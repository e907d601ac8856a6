/* The SIMT interpreter's private interface (interp/simt*.c).
 *
 * A SIMT kernel runs program by program; within a program all nthreads
 * threads run each instruction before the next one starts (lockstep), so a
 * barrier has nothing left to do. Every value is a tj_rval of the Tile
 * interpreter holding nthreads * width slots, thread-major (thread t's
 * element e at t * width + e): the Tile interpreter's elementwise handlers
 * (tj_exec_binary, ...) then run on it unchanged. Control flow must be
 * uniform (docs/simt.md); the interpreter checks that every thread agrees
 * on a branch or a loop bound and reports it otherwise. */
#ifndef TJ_INTERP_SIMT_H
#define TJ_INTERP_SIMT_H

#include "interp/interp.h"

enum { TJ_SIMT_NAMED_BARRIERS = 16 }; /* bar.sync's barriers of a program, 0 among them */

/* The bytes a tensor argument may be accessed in: [lo, hi). */
typedef struct tj_simt_extent {
    uintptr_t lo, hi;
} tj_simt_extent;

typedef struct tj_simt {
    tj_interp st;             /* k, ctx, args, vals (one per instruction), pid, nprog */
    uint32_t nthreads;
    unsigned char *smem;      /* the program's shared memory */
    unsigned char *smem_set;  /* one flag per shared byte: written in this program */
    uint16_t *smem_landed;    /* per shared byte: 1 + the thread whose copy landed it since
                                 the last barrier (others may not read it yet), or 0 */
    int landed_any;           /* some byte of smem_landed is not 0 */
    /* races between warps (simt_mem.c): per shared byte, the warps (bit w)
     * that wrote and that read it in the barrier interval `epoch` */
    uint32_t *smem_wepoch, *smem_repoch;
    uint64_t *smem_writers, *smem_readers;
    uint32_t epoch;
    tj_simt_extent *extent;   /* per parameter (empty for scalars) */
    uint32_t last_tensor;     /* the parameter of the last global access (a cache) */
    struct tj_simt_copy *copies; /* cp_async copies issued and not landed, oldest first */
    uint32_t first_copy, ncopies, copy_cap;
    uint32_t *group_end;      /* per closed group in flight, oldest first: its end in copies */
    uint32_t ngroups, group_cap;
    /* wgmma (simt_wgmma.c): what groups not yet waited for read, and which
     * bytes the generic proxy wrote since the last fence_proxy_async */
    uint16_t *smem_wg_reads;  /* per shared byte: reads by wgmma groups in flight */
    unsigned char *smem_generic; /* per shared byte: written by st_shared or a landed copy, not fenced */
    int generic_any;
    uint32_t *wg_bytes;       /* the bytes those groups read, oldest group first */
    uint32_t nwg_bytes, wg_bytes_cap;
    uint32_t *wg_group_end;   /* per committed group in flight: its end in wg_bytes */
    uint32_t nwg_groups, wg_group_cap;
    tj_ref *wg_aregs;         /* register a operands of the groups in flight (and the open one), oldest first */
    uint32_t nwg_aregs, wg_aregs_cap;
    uint32_t *wg_group_aend;  /* per committed group in flight: its end in wg_aregs */
    uint32_t wg_group_acap;
    struct tj_simt_tma *tma;  /* mbarriers and TMA copies in flight (simt_tma.c) */
    uint32_t bar_arrived[TJ_SIMT_NAMED_BARRIERS]; /* named barriers (simt_turns.c): arrivals of the */
    uint32_t bar_count[TJ_SIMT_NAMED_BARRIERS];   /* current phase, the count it completes at and */
    uint32_t bar_warps[TJ_SIMT_NAMED_BARRIERS];   /* the warps arrived (bit w: warp w) */
    void *storage;
} tj_simt;

/* Elements per thread of value r (1 for a scalar). */
static inline uint32_t tj_simt_width(const tj_simt *s, tj_ref r)
{
    return s->st.vals[r].n / s->nthreads;
}

/* Reports a run-time error at instruction r (thread < 0: not one thread's);
 * returns -1. */
int tj_simt_fail(const tj_simt *s, tj_ref r, int64_t thread, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* simt_mem.c: global and shared memory, atomics */
int tj_simt_load_global(tj_simt *s, tj_ref r);
int tj_simt_store_global(tj_simt *s, tj_ref r);
int tj_simt_atomic(tj_simt *s, tj_ref r);
/* Host memory for the global bytes [addr, addr + bytes); NULL after
 * reporting when they are not all inside one tensor argument. */
unsigned char *tj_simt_global_bytes(tj_simt *s, tj_ref r, uint32_t t, uint64_t addr, uint32_t bytes);
/* Shared bytes [off, off + bytes) of thread t: in range and aligned. */
int tj_simt_shared_range(const tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t bytes);
int tj_simt_load_shared(tj_simt *s, tj_ref r);
int tj_simt_store_shared(tj_simt *s, tj_ref r);
int tj_simt_red_add_shared(tj_simt *s, tj_ref r);
/* One element of dtype dt at shared byte off, for thread t: checked for
 * range, alignment and (reads) an earlier write; -1 after reporting. */
int tj_simt_shared_get(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot *out);
int tj_simt_shared_put(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot v);
/* tj_simt_shared_get without the race checks: the tensor cores' reads, atomics */
int tj_simt_shared_peek(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, tj_dtype dt, tj_slot *out);
/* Shared bytes [off, off + bytes) read (data NULL) or about to be written
 * with data by thread t: reported where another warp wrote (read) them
 * since the last barrier of all warps, as a GPU could order them either
 * way; bytes a write leaves as they are do not count. */
int tj_simt_shared_access(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t bytes, const unsigned char *data);

/* simt_mma.c: row and column of slot j of lane l in a fragment of
 * role / dtype (the PTX fragment layouts) */
void tj_simt_fragment_element(int role, tj_dtype dt, uint32_t l, uint32_t j, uint32_t *row, uint32_t *col);
/* simt_wgmma.c: wgmma_desc, wgmma and its group's fence, commit and wait,
 * each under its predicate (per warpgroup) */
int tj_simt_wgmma_desc(tj_simt *s, tj_ref r);
int tj_simt_wgmma(tj_simt *s, tj_ref r);
int tj_simt_wgmma_fence(tj_simt *s, tj_ref r);
int tj_simt_wgmma_commit(tj_simt *s, tj_ref r);
int tj_simt_wgmma_wait(tj_simt *s, tj_ref r);
void tj_simt_fence_proxy_async(tj_simt *s);
/* Shared bytes [off, off + n) are written by thread t: refused while a
 * wgmma group in flight reads them; marked as the generic proxy's. */
int tj_simt_wgmma_guard(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n);
void tj_simt_wgmma_reset(tj_simt *s);
/* Instruction r about to run: an error when it redefines or reads (other
 * than as another wgmma's a) the registers of a wgmma's a operand whose
 * group is in flight, which the PTX ISA leaves undefined. */
int tj_simt_wgmma_registers_free(tj_simt *s, tj_ref r);
void tj_simt_wgmma_free(tj_simt *s);

/* Shared bytes [off, off + n) may be written by thread t: no wgmma group
 * in flight reads them, nor a TMA store not retired (tj_simt_wgmma_guard
 * without marking them). */
int tj_simt_wgmma_unread(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n);

/* simt_tma.c: mbarriers and TMA loads */
int tj_simt_mbarrier(tj_simt *s, tj_ref r); /* mbar_init, mbar_expect_tx, mbar_arrive, mbar_wait, mbar_inval */
int tj_simt_mbar_wait(tj_simt *s, tj_ref r, const tj_rval *addr, const tj_rval *parity, const tj_rval *pred);
int tj_simt_tma_load(tj_simt *s, tj_ref r);
int tj_simt_tma_store(tj_simt *s, tj_ref r);
int tj_simt_tma_store_group(tj_simt *s, tj_ref r); /* tma_store_commit, tma_store_wait */
/* Shared bytes [off, off + n) may be written by thread t: no TMA store
 * whose group is not retired reads them. */
int tj_simt_tma_unread(tj_simt *s, tj_ref r, uint32_t t, uint64_t off, uint32_t n);
int tj_simt_tma_end(tj_simt *s);   /* a program's end: no copy or store left in flight */
void tj_simt_tma_reset(tj_simt *s); /* a new program */
void tj_simt_tma_free(tj_simt *s);

/* simt_turns.c: bar_sync and bar_arrive (arrivals counted per phase) */
int tj_simt_named_barrier(tj_simt *s, tj_ref r);
int tj_simt_named_end(tj_simt *s);    /* a program's end: no phase left part-full */
void tj_simt_named_reset(tj_simt *s); /* a new program */

/* simt_async.c: cp_async, its groups and waits */
int tj_simt_cp_async(tj_simt *s, tj_ref r);
int tj_simt_cp_async_commit(tj_simt *s, tj_ref r);
int tj_simt_cp_async_wait(tj_simt *s, tj_ref r);
void tj_simt_copies_reset(tj_simt *s); /* a new program: copies still in flight are dropped */
void tj_simt_barrier(tj_simt *s);      /* publishes the landed bytes to every thread */
void tj_simt_copies_free(tj_simt *s);

/* simt_mma.c: the matrix atom */
int tj_simt_mma_load(tj_simt *s, tj_ref r);
int tj_simt_mma(tj_simt *s, tj_ref r);
int tj_simt_mma_store(tj_simt *s, tj_ref r);
int tj_simt_mma_fill(tj_simt *s, tj_ref r);
int tj_simt_mma_repack(tj_simt *s, tj_ref r);

/* simt_warp.c: shuffles, pack, extract */
int tj_simt_shuffle(tj_simt *s, tj_ref r);
int tj_simt_ballot(tj_simt *s, tj_ref r);
int tj_simt_elect(tj_simt *s, tj_ref r);
int tj_simt_pack(tj_simt *s, tj_ref r);
int tj_simt_extract(tj_simt *s, tj_ref r);

#endif
