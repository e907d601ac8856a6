/* The GPU lowering of lib/kernels/topk.tj and selective_scan.tj: each
 * kernel, substituted as lib/topk.c and lib/selective_scan.c substitute
 * it, lowered to SIMT IR for CUDA and run by the SIMT interpreter against
 * the reference interpreter on random inputs (lower_check.h), at small
 * sizes with partial tiles. */
#include <criterion/criterion.h>

#include "lower_check.h"
#include "tilejit/frontend.h"

/* lib/kernels/FAMILY.tj with every "$KEY" of subst ("KEY=VALUE;...") replaced */
static char *lib_source(const char *family, const char *subst)
{
    const char *root = getenv("TJ_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/lib/kernels/%s.tj", root ? root : ".", family);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    size_t cap = 2 * n + 4096, len = 0;
    char *out = malloc(cap);
    for (const char *s = text; *s;) {
        if (*s != '$') {
            out[len++] = *s++;
            continue;
        }
        size_t k = 1;
        while ((s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '_')
            k++;
        const char *p = subst, *value = NULL;
        size_t vlen = 0;
        while (p && *p && !value) {
            const char *eq = strchr(p, '='), *end = strchr(p, ';');
            end = end ? end : p + strlen(p);
            if (eq && (size_t)(eq - p) == k - 1 && !strncmp(p, s + 1, k - 1))
                value = eq + 1, vlen = (size_t)(end - eq - 1);
            p = *end ? end + 1 : end;
        }
        cr_assert(value, "no value for %.*s in %s", (int)k, s, family);
        cr_assert(len + vlen < cap);
        memcpy(out + len, value, vlen);
        len += vlen;
        s += k;
    }
    out[len] = '\0';
    return out;
}

static void check(const char *family, const char *subst, const char *kernel, const lc_opts *o)
{
    char *src = lib_source(family, subst);
    cr_assert(lc_check_tj(src, kernel, o), "%s %s (%s) differs from the interpreter", family, kernel, subst);
    free(src);
}

static const char *const topk_kinds[] = {"K=u32;KEY=key_f32;BITS=32", "K=u16;KEY=key_bf16;BITS=16",
                                         "K=u16;KEY=key_f16;BITS=16", "K=u32;KEY=key_i32;BITS=32"};

Test(lib_lower, topk_select)
{
    for (int kind = 0; kind < 4; kind++)
        for (int rb = 1; rb <= 2; rb++) {
            lc_opts o = lc_defaults();
            char defines[64];
            snprintf(defines, sizeof defines, "RB=%d", rb);
            o.defines = defines;
            o.shapes = "A0=2,A1=5,N=300,SL=320"; /* 5 rows of 300 (BLOCK 512), slots of 64 a row */
            o.scalars = "k=37,kp=64";
            o.ilo = 0, o.ihi = 40; /* bits with ties; Slots start anywhere: atomic adds are exact */
            check("topk", topk_kinds[kind], "topk_select", &o);
        }
}

Test(lib_lower, topk_order)
{
    for (int kind = 0; kind < 4; kind++) {
        lc_opts o = lc_defaults();
        o.shapes = "A0=2,A1=5,N=300,KP=64,K=37";
        o.ilo = 0, o.ihi = 300; /* slots: columns of the row */
        check("topk", topk_kinds[kind], "topk_order", &o);
    }
}

static const char *const ssm_variants[] = {"T=f32;HAS_D=1;HAS_Z=1;HAS_BIAS=1;SOFTPLUS=1;SEG=16;TTS=2, 4",
                                           "T=bf16;HAS_D=0;HAS_Z=1;HAS_BIAS=0;SOFTPLUS=1;SEG=16;TTS=4, 2",
                                           "T=f32;HAS_D=1;HAS_Z=0;HAS_BIAS=1;SOFTPLUS=0;SEG=32;TTS=2, 4"};

Test(lib_lower, ss_segment_state)
{
    for (int v = 0; v < 3; v++)
        for (int tt = 2; tt <= 4; tt += 2) {
            lc_opts o = lc_defaults();
            char defines[32];
            snprintf(defines, sizeof defines, "TT=%d", tt);
            o.defines = defines;
            o.warps[0] = 1, o.warps[1] = 0;
            o.lo = -1, o.hi = 1;
            /* 40 channels (a partial group of 32), segments of 16 (3) or 32 (2) steps over L = 45 */
            o.shapes = v == 2 ? "NB=2,DM=40,L=45,N=5,DB=40,BB=40,NSEG=2,NSP=8" : "NB=2,DM=40,L=45,N=5,DB=40,BB=40,NSEG=3,NSP=8";
            check("selective_scan", ssm_variants[v], "ss_segment_state", &o);
        }
}

Test(lib_lower, ss_segment_out)
{
    for (int v = 0; v < 3; v++)
        for (int tt = 2; tt <= 4; tt += 2) {
            lc_opts o = lc_defaults();
            char defines[32];
            snprintf(defines, sizeof defines, "TT=%d", tt);
            o.defines = defines;
            o.warps[0] = 1, o.warps[1] = 0;
            o.lo = -1, o.hi = 1;
            o.shapes = v == 2 ? "NB=2,DM=40,L=45,N=5,DB=40,DD=40,ZB=2,ZD=40,ZL=45,BB=40,NSEG=2,NSP=8"
                              : "NB=2,DM=40,L=45,N=5,DB=40,DD=40,ZB=2,ZD=40,ZL=45,BB=40,NSEG=3,NSP=8";
            check("selective_scan", ssm_variants[v], "ss_segment_out", &o);
        }
}
