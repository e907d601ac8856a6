/* The library's kernels as lowering test cases, for the tests that lower
 * them for CUDA (tests/unit/test_lib_lower.c, the SIMT interpreter) and for
 * Metal (tests/msl_emu/test_lib_kernels.c, the MSL emulator), each against
 * the reference interpreter: a kernel of lib/kernels/FAMILY.tj substituted
 * by lib/lib.c itself from "KEY=VALUE;..." (the keys the kernel does not
 * read left to the library's stand-ins), and the sizes, tile parameters,
 * scalars and input ranges of one case. */
#ifndef TJ_TEST_LIB_SOURCE_H
#define TJ_TEST_LIB_SOURCE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/lib_internal.h"

/* lib/kernels/FAMILY.tj substituted by the library itself
 * (lib_kernel_source: the keys `kernel` does not read may be left out)
 * from "KEY=VALUE;..." (a value runs to the next ';'); kernel NULL: the
 * whole family, every key given. malloc'ed, or NULL after saying why. */
static inline char *ls_lib_source(const char *family, const char *kernel, const char *subst)
{
    enum { MAX_SUBST = 32 };
    lib_subst s[MAX_SUBST];
    uint32_t n = 0;
    size_t len = strlen(subst);
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, subst, len + 1);
    for (char *p = copy; p && *p;) {
        char *end = strchr(p, ';');
        if (end)
            *end = '\0';
        char *eq = strchr(p, '=');
        if (!eq || n == MAX_SUBST) {
            printf("%s: malformed substitutions '%s'\n", family, subst);
            free(copy);
            return NULL;
        }
        *eq = '\0';
        s[n++] = (lib_subst){p, eq + 1};
        p = end ? end + 1 : NULL;
    }
    tj_rt_error err = {{0}};
    char *out = lib_kernel_source(family, kernel, s, n, &err);
    if (!out)
        printf("%s %s: %s\n", family, kernel ? kernel : "(every kernel)", err.msg);
    free(copy);
    return out;
}

/* scan.tj's substitutions as lib/scan.c makes them: cumsum's aggregate and
 * window combine are sums, any other combine's are taken from scans */
#define LS_SCAN_SUM(T, U)                                                                                        \
    "T=" T ";COMBINE=a + b;U=" U ";AGGREGATE=" T "(sum(where(arange(B) < n, x, 0)))"                              \
    ";NEAREST=sum(where(m <= last, v, 0))"
#define LS_SCAN(T, U, COMBINE)                                                                                   \
    "T=" T ";COMBINE=" COMBINE ";U=" U ";AGGREGATE=last_of(scan(x, axis = 0, combine = combine), n)"             \
    ";NEAREST=sum(where(m == last, scan(v, axis = 0, combine = combine_nearest_first), 0))"
typedef struct lib_case {
    const char *family, *subst, *kernel;
    const char *defines, *shapes, *scalars;
    int warps;        /* 0: the kernel's own */
    double lo, hi;    /* random floats in [lo, hi); 0, 0: lower_check.h's */
    int64_t ilo, ihi; /* random integers in [ilo, ihi); 0, 0: lower_check.h's */
    const char *int_range; /* one integer tensor's own range (lc_opts.int_range), or NULL */
} lib_case;

#define LS_TOPK_F32 "K=u32;KEY=key_f32;BITS=32"
#define LS_TOPK_BF16 "K=u16;KEY=key_bf16;BITS=16"
#define LS_TOPK_F16 "K=u16;KEY=key_f16;BITS=16"
#define LS_TOPK_I32 "K=u32;KEY=key_i32;BITS=32"
/* 5 rows of 300 (BLOCK 512), slots of 64 a row; bits with ties; the slots
 * start anywhere (atomic adds are exact) */
#define LS_SELECT(kind, rb) {"topk", kind, "topk_select", rb, "A0=2,A1=5,N=300,SL=320", "k=37,kp=64", 0, 0, 0, 0, 40, NULL}
/* rows longer than a tile: 3 rows of 5000 (two tiles of 4096) */
#define LS_SELECT_LONG(kind, rb) {"topk", kind, "topk_select_long", rb, "A0=1,A1=3,N=5000,SL=192", "k=50,kp=64", 0, 0, 0, 0, 60, NULL}
/* the slots: columns of the row */
#define LS_ORDER(kind) {"topk", kind, "topk_order", "", "A0=2,A1=5,N=300,KP=64,K=37", "", 0, 0, 0, 0, 300, NULL}
/* a long line's candidates: 4 segments of k = 50 (M = 200), positions J among them */
#define LS_CANDIDATES {"topk", LS_TOPK_F32, "topk_candidate_indices", "", "A0=2,A1=3,M=200,K=37", "k=50,seg=4096", 0, 0, 0, 0, 200, NULL}
#define LS_SSM_F32 "T=f32;HAS_D=1;HAS_Z=1;HAS_BIAS=1;SOFTPLUS=1;SEG=16;TTS=2, 4"
#define LS_SSM_BF16 "T=bf16;HAS_D=0;HAS_Z=1;HAS_BIAS=0;SOFTPLUS=1;SEG=16;TTS=4, 2"
#define LS_SSM_F32_PLAIN "T=f32;HAS_D=1;HAS_Z=0;HAS_BIAS=1;SOFTPLUS=0;SEG=32;TTS=2, 4"
/* 40 channels (a partial group of 32), segments of 16 (3) or 32 (2) steps over L = 45 */
#define LS_SSM_DIMS "NB=2,DM=40,L=45,N=5,DB=40,DD=40,ZB=2,ZD=40,ZL=45,BB=40,NSP=8"
#define LS_SSM(kind, kernel, tt, nseg) {"selective_scan", kind, kernel, tt, LS_SSM_DIMS ",NSEG=" nseg, "", 1, -1, 1, 0, 0, NULL}
/* the one pass (ss_chunked, its own W warps and TT steps a thread: chunks of
 * 32 W TT): L = 150 in chunks of 32 to 128 (2 to 5, the last partial) or in
 * one of 512 or 2048 (the library's TT 16, across warps); 3
 * channels; inputs below 0.25, so that exp(dt * A) over 150 steps stays finite */
#define LS_SSM_CHUNK_F32(w, tt) "T=f32;HAS_D=1;HAS_Z=1;HAS_BIAS=1;SOFTPLUS=1;W=" w ";TT=" tt
#define LS_SSM_CHUNK_BF16(w, tt) "T=bf16;HAS_D=0;HAS_Z=1;HAS_BIAS=0;SOFTPLUS=1;W=" w ";TT=" tt
#define LS_SSM_CHUNK_PLAIN(w, tt) "T=f32;HAS_D=0;HAS_Z=0;HAS_BIAS=1;SOFTPLUS=0;W=" w ";TT=" tt
#define LS_SSM_CHUNK_DIMS "NB=2,DM=3,L=150,N=5,DB=3,DD=3,ZB=2,ZD=3,ZL=150,BB=3,NSP=8,NSEG=1"
#define LS_SSM_CHUNK(kind) {"selective_scan", kind, "ss_chunked", "", LS_SSM_CHUNK_DIMS, "", 0, -1, 0.25, 0, 0, NULL}
/* a warp a channel (ss_chunked_rows): 3 channels on programs of W warps
 * (the last program's last warps without one), chunks of ch = 32 TT steps;
 * the per-channel values' stride-0 axis (AL, DL, BL, HL) is ch long */
/* without D and z; softplus keeps dt > 0 (without it, exp(dt * A) of these
 * inputs grows to ~1e4 over 150 steps, where the two orders of the sums
 * part at 2e-4) */
#define LS_SSM_ROWS_NO_D_Z(w, tt) "T=f32;HAS_D=0;HAS_Z=0;HAS_BIAS=1;SOFTPLUS=1;W=" w ";TT=" tt
#define LS_SSM_ROWS_DIMS(ch) LS_SSM_CHUNK_DIMS ",AL=" ch ",DL=" ch ",BL=" ch ",HL=" ch
#define LS_SSM_ROWS(kind, ch) {"selective_scan", kind, "ss_chunked_rows", "", LS_SSM_ROWS_DIMS(ch), "", 0, -1, 0.25, 0, 0, NULL}
/* the state at the edges: one batch, one channel, one state, so H is one
 * f32 and every access to it is at its end (the SIMT interpreter fails an
 * access outside every tensor): L = 1 (one partial chunk) and L = 65 (two
 * chunks of 64, the first load of H at t = 0 discarded, the second read) */
#define LS_SSM_EDGE_DIMS(l) "NB=1,DM=1,L=" l ",N=1,DB=1,DD=1,ZB=1,ZD=1,ZL=" l ",BB=1,NSP=1,NSEG=1"
#define LS_SSM_EDGE(w, tt, l) {"selective_scan", LS_SSM_CHUNK_F32(w, tt), "ss_chunked", "", LS_SSM_EDGE_DIMS(l), "", 0, -1, 0.25, 0, 0, NULL}
#define LS_SSM_ROWS_EDGE(w, tt, l, ch)                                                                              \
    {"selective_scan", LS_SSM_CHUNK_F32(w, tt), "ss_chunked_rows", "", LS_SSM_EDGE_DIMS(l) ",AL=" ch ",DL=" ch ",BL=" ch \
     ",HL=" ch, "", 0, -1, 0.25, 0, 0, NULL}

/* the radix sort's passes (lib/kernels/sort.tj): 3 tiles of 2048, the last
 * partial; the first pass (keys from X), a later key pass, and a segment
 * pass whose flat indices are P's. The offsets over 40 tiles (two
 * programs, the second partial); the scatter of one partial tile with
 * every offset 0 (to places 0 to 1499: distinct; one program, so no
 * schedule changes which tile writes last): the first pass (flat indices,
 * or carried bits), a later key pass, the last (no keys stored), a segment
 * pass, 64-bit keys */
/* the radix kernels' (sort_rows' $VALUES left out), at Metal's tile of 2048
 * (test_lib_lower.c also runs CUDA's 4096) */
#define LS_SORT_F32 "K=u32;KEY=key_f32;DESC=0;W=u32;RB=2048"
#define LS_RADIX_DIMS "N=5000,D=256,T=3"
#define LS_RADIX_HIST(scalars) {"sort", LS_SORT_F32, "radix_hist", "", LS_RADIX_DIMS, scalars, 0, 0, 0, 0, 5000, NULL}
#define LS_RADIX_SCATTER(scalars) \
    {"sort", LS_SORT_F32, "radix_scatter", "", "N=1500,D=256,T=1", scalars, 0, 0, 0, 0, 1500, "G=0:1"}
/* 64-bit keys (i64's, kept as u64): the gathers of the scatter at 8 bytes */
#define LS_SORT_I64 "K=u64;KEY=key_i64;DESC=0;W=u64;RB=2048"
#define LS_RADIX_SCATTER_U64(scalars) \
    {"sort", LS_SORT_I64, "radix_scatter", "", "N=1500,D=256,T=1", scalars, 0, 0, 0, 0, 1500, "G=0:1,K=0:1000000000000"}
#define LS_RADIX_OFFSETS {"sort", LS_SORT_F32, "radix_offsets", "", "D=256,T=40", "", 0, 0, 0, -1000, 1000, NULL}
/* the single pass's upsweep: every pass's counts (5: a segment byte) added
 * to Hg by atomics */
#define LS_RADIX_UPSWEEP \
    {"sort", LS_SORT_F32, "radix_upsweep", "", "N=5000,S=5,D=256", \
     "passes=5,key_passes=4,lines_n=700,lines_q=1", 0, 0, 0, 0, 5000, NULL}

static const lib_case ls_cases[] = {
    LS_SELECT(LS_TOPK_F32, "RB=1"), LS_SELECT(LS_TOPK_F32, "RB=2"), LS_SELECT(LS_TOPK_BF16, "RB=1"),
    LS_SELECT(LS_TOPK_BF16, "RB=2"), LS_SELECT(LS_TOPK_F16, "RB=2"), LS_SELECT(LS_TOPK_I32, "RB=2"),
    LS_SELECT_LONG(LS_TOPK_F32, ""), LS_SELECT_LONG(LS_TOPK_BF16, ""),
    LS_ORDER(LS_TOPK_F32), LS_ORDER(LS_TOPK_BF16), LS_ORDER(LS_TOPK_F16), LS_ORDER(LS_TOPK_I32), LS_CANDIDATES,
    LS_SSM(LS_SSM_F32, "ss_segment_state", "TT=2", "3"), LS_SSM(LS_SSM_F32, "ss_segment_state", "TT=4", "3"),
    LS_SSM(LS_SSM_BF16, "ss_segment_state", "TT=4", "3"), LS_SSM(LS_SSM_F32_PLAIN, "ss_segment_state", "TT=2", "2"),
    LS_SSM(LS_SSM_F32, "ss_segment_out", "TT=2", "3"), LS_SSM(LS_SSM_F32, "ss_segment_out", "TT=4", "3"),
    LS_SSM(LS_SSM_BF16, "ss_segment_out", "TT=4", "3"), LS_SSM(LS_SSM_BF16, "ss_segment_out", "TT=2", "3"),
    LS_SSM(LS_SSM_F32_PLAIN, "ss_segment_out", "TT=2", "2"),
    LS_SSM_CHUNK(LS_SSM_CHUNK_F32("1", "2")), LS_SSM_CHUNK(LS_SSM_CHUNK_F32("2", "2")),
    LS_SSM_CHUNK(LS_SSM_CHUNK_F32("1", "4")), LS_SSM_CHUNK(LS_SSM_CHUNK_BF16("1", "2")),
    LS_SSM_CHUNK(LS_SSM_CHUNK_BF16("1", "4")), LS_SSM_CHUNK(LS_SSM_CHUNK_PLAIN("2", "1")),
    LS_SSM_CHUNK(LS_SSM_CHUNK_F32("4", "16")), LS_SSM_CHUNK(LS_SSM_CHUNK_BF16("2", "8")), /* the library's */
    LS_SSM_ROWS(LS_SSM_CHUNK_F32("2", "2"), "64"), LS_SSM_ROWS(LS_SSM_CHUNK_F32("4", "1"), "32"),
    LS_SSM_ROWS(LS_SSM_CHUNK_BF16("2", "4"), "128"), LS_SSM_ROWS(LS_SSM_ROWS_NO_D_Z("2", "2"), "64"),
    LS_SSM_ROWS(LS_SSM_CHUNK_F32("4", "16"), "512"),
    LS_SSM_EDGE("1", "2", "1"), LS_SSM_EDGE("1", "2", "65"), LS_SSM_ROWS_EDGE("4", "2", "1", "64"),
    LS_SSM_ROWS_EDGE("4", "2", "65", "64"),
    LS_RADIX_HIST("pass=0,key_passes=4,lines_n=5000,lines_q=1"),
    LS_RADIX_HIST("pass=1,key_passes=4,lines_n=5000,lines_q=1"),
    LS_RADIX_HIST("pass=4,key_passes=4,lines_n=700,lines_q=1"),
    LS_RADIX_OFFSETS,
    LS_RADIX_SCATTER("pass=0,key_passes=4,lines_n=1500,lines_q=1,carry=0,last=0,indices=0"),
    LS_RADIX_SCATTER("pass=0,key_passes=4,lines_n=1500,lines_q=1,carry=1,last=0,indices=0"),
    LS_RADIX_SCATTER("pass=2,key_passes=4,lines_n=1500,lines_q=1,carry=0,last=0,indices=0"),
    LS_RADIX_SCATTER("pass=3,key_passes=4,lines_n=1500,lines_q=1,carry=1,last=1,indices=0"),
    LS_RADIX_SCATTER("pass=4,key_passes=4,lines_n=700,lines_q=1,carry=0,last=1,indices=1"),
    LS_RADIX_SCATTER_U64("pass=4,key_passes=8,lines_n=1500,lines_q=1,carry=0,last=0,indices=0"),
    LS_RADIX_UPSWEEP,
    {"sort", LS_SORT_F32, "radix_finish_carried", "", "N=5000", "", 0, 0, 0, -5000, 5000, NULL},
};

#endif
