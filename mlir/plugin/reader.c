/* The MLIR reader: parses MLIR text through MLIR's C API (MLIR 22) and
 * writes it out as a tj_mprog (mlir/program.h), plain data the importer
 * reads without MLIR. Built as its own shared module (libtilejit_mlir.so),
 * loaded by the importer with dlopen on first use. Every dialect MLIR has
 * is registered, so any module parses and the importer can name each op it
 * does not support at its location; unregistered dialects are allowed in
 * generic form for the same reason. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/AffineExpr.h>
#include <mlir-c/AffineMap.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/IR.h>
#include <mlir-c/RegisterEverything.h>

#include "mlir/program.h"

#if defined(__GNUC__)
#define TJ_EXPORT __attribute__((visibility("default")))
#else
#define TJ_EXPORT
#endif

/* ---- pools ---------------------------------------------------------------- */

/* Room for one more item of a pool; 0 when the program ran out of memory. */
static int grow(tj_mprog *p, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (p->oom)
        return 0;
    if (need <= *cap)
        return 1;
    uint32_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *a = realloc(*arr, (size_t)n * elem);
    if (!a) {
        p->oom = 1;
        return 0;
    }
    *arr = a;
    *cap = n;
    return 1;
}

#define PUSH(p, pool, count, cap) grow((p), (void **)&(p)->pool, &(p)->cap, (p)->count + 1, sizeof *(p)->pool)

static uint32_t add_string(tj_mprog *p, const char *s, size_t n)
{
    if (!grow(p, (void **)&p->strings, &p->cap_strings, p->nstrings + (uint32_t)n + 1, 1))
        return 0;
    uint32_t at = p->nstrings;
    memcpy(p->strings + at, s, n);
    p->strings[at + n] = 0;
    p->nstrings += (uint32_t)n + 1;
    return at;
}

static uint32_t add_ref(tj_mprog *p, MlirStringRef s) { return add_string(p, s.data, s.length); }

static void add_int(tj_mprog *p, int64_t v)
{
    if (PUSH(p, ints, nints, cap_ints))
        p->ints[p->nints++] = v;
}

/* MLIR's printers write through a callback: into a growing buffer. */
typedef struct text {
    char *s;
    size_t n, cap;
    int failed;
} text;

static void append(MlirStringRef part, void *ud)
{
    text *t = ud;
    if (t->failed)
        return;
    if (t->n + part.length + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 128) + part.length;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->n, part.data, part.length);
    t->n += part.length;
    t->s[t->n] = 0;
}

static uint32_t take_text(tj_mprog *p, text *t)
{
    if (t->failed)
        p->oom = 1;
    uint32_t at = add_string(p, t->s ? t->s : "", t->n);
    free(t->s);
    return at;
}

static uint32_t type_text(tj_mprog *p, MlirType ty)
{
    text t = {0};
    mlirTypePrint(ty, append, &t);
    return take_text(p, &t);
}

static uint32_t attr_text(tj_mprog *p, MlirAttribute a)
{
    text t = {0};
    mlirAttributePrint(a, append, &t);
    return take_text(p, &t);
}

/* ---- values: MlirValue -> id, an open-addressing table ------------------ */

typedef struct value_map {
    const void **keys;
    uint32_t *ids;
    uint32_t cap, n;
} value_map;

static uint32_t hash_ptr(const void *k) { return (uint32_t)(((uintptr_t)k >> 4) * 2654435761u); }

static int map_put(value_map *m, const void *key, uint32_t id)
{
    if (2 * (m->n + 1) > m->cap) {
        value_map bigger = {calloc(m->cap ? m->cap * 2 : 256, sizeof(void *)), NULL, m->cap ? m->cap * 2 : 256, 0};
        bigger.ids = malloc(bigger.cap * sizeof(uint32_t));
        if (!bigger.keys || !bigger.ids) {
            free(bigger.keys);
            free(bigger.ids);
            return 1;
        }
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                map_put(&bigger, m->keys[i], m->ids[i]);
        free(m->keys);
        free(m->ids);
        *m = bigger;
    }
    uint32_t i = hash_ptr(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = key;
    m->ids[i] = id;
    return 0;
}

static uint32_t map_get(const value_map *m, const void *key)
{
    if (!m->cap)
        return UINT32_MAX;
    uint32_t i = hash_ptr(key) & (m->cap - 1);
    for (; m->keys[i]; i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key)
            return m->ids[i];
    return UINT32_MAX;
}

/* ---- types ------------------------------------------------------------------ */

static tj_dtype scalar_dtype(MlirType t, int *index)
{
    *index = 0;
    if (mlirTypeIsAF32(t))
        return TJ_DT_F32;
    if (mlirTypeIsAF16(t))
        return TJ_DT_F16;
    if (mlirTypeIsABF16(t))
        return TJ_DT_BF16;
    if (mlirTypeIsAF64(t))
        return TJ_DT_F64;
    if (mlirTypeIsAIndex(t)) {
        *index = 1;
        return TJ_DT_I64;
    }
    if (!mlirTypeIsAInteger(t))
        return TJ_DT_INVALID;
    unsigned w = mlirIntegerTypeGetWidth(t);
    int u = mlirIntegerTypeIsUnsigned(t);
    switch (w) {
    case 1: return TJ_DT_BOOL;
    case 8: return u ? TJ_DT_U8 : TJ_DT_I8;
    case 16: return u ? TJ_DT_U16 : TJ_DT_I16;
    case 32: return u ? TJ_DT_U32 : TJ_DT_I32;
    case 64: return u ? TJ_DT_U64 : TJ_DT_I64;
    default: return TJ_DT_INVALID;
    }
}

static void describe_type(tj_mprog *p, MlirType t, tj_mvalue *v)
{
    memset(v, 0, sizeof *v);
    v->text = type_text(p, t);
    if (mlirTypeIsARankedTensor(t)) {
        v->kind = TJ_MT_TENSOR;
        v->dtype = scalar_dtype(mlirShapedTypeGetElementType(t), &v->index);
        int64_t rank = mlirShapedTypeGetRank(t);
        v->rank = rank > TJ_MAX_RANK ? -1 : (int)rank;
        for (int d = 0; d < v->rank; d++)
            v->shape[d] = mlirShapedTypeIsDynamicDim(t, d) ? TJ_MDIM_DYNAMIC : mlirShapedTypeGetDimSize(t, d);
        return;
    }
    v->dtype = scalar_dtype(t, &v->index);
    v->kind = v->dtype != TJ_DT_INVALID ? TJ_MT_SCALAR : TJ_MT_OTHER;
    v->rank = v->kind == TJ_MT_SCALAR ? 0 : -1;
}

typedef struct reader {
    tj_mprog *p;
    value_map values;
    MlirStringRef file;
} reader;

static uint32_t define_value(reader *r, MlirValue v)
{
    tj_mprog *p = r->p;
    if (!PUSH(p, values, nvalues, cap_values))
        return 0;
    uint32_t id = p->nvalues++;
    describe_type(p, mlirValueGetType(v), &p->values[id]);
    if (map_put(&r->values, v.ptr, id))
        p->oom = 1;
    return id;
}

/* ---- locations ------------------------------------------------------------------ */

/* The FILE:LINE:COL inside a location (through names, call sites: the
 * callee, fused locations: the first that has one). */
static int file_line_col(MlirLocation loc, MlirIdentifier *file, int *line, int *col, int depth)
{
    if (depth > 16 || mlirLocationIsNull(loc))
        return 0;
    if (mlirLocationIsAFileLineColRange(loc)) {
        *file = mlirLocationFileLineColRangeGetFilename(loc);
        *line = mlirLocationFileLineColRangeGetStartLine(loc);
        *col = mlirLocationFileLineColRangeGetStartColumn(loc);
        return 1;
    }
    if (mlirLocationIsAName(loc))
        return file_line_col(mlirLocationNameGetChildLoc(loc), file, line, col, depth + 1);
    if (mlirLocationIsACallSite(loc))
        return file_line_col(mlirLocationCallSiteGetCallee(loc), file, line, col, depth + 1);
    if (mlirLocationIsAFused(loc)) {
        intptr_t n = mlirLocationFusedGetNumLocations(loc);
        MlirLocation parts[16];
        if (n <= 0 || n > 16)
            return 0;
        mlirLocationFusedGetLocations(loc, parts);
        for (intptr_t i = 0; i < n; i++)
            if (file_line_col(parts[i], file, line, col, depth + 1))
                return 1;
    }
    return 0;
}

static void locate(tj_mprog *p, MlirLocation loc, uint32_t *line, uint32_t *col, uint32_t *file)
{
    MlirIdentifier f;
    int l = 0, c = 0;
    *line = *col = 0;
    *file = 0;
    if (file_line_col(loc, &f, &l, &c, 0) && l > 0) {
        *line = (uint32_t)l;
        *col = (uint32_t)(c > 0 ? c : 1);
        *file = add_ref(p, mlirIdentifierStr(f));
    }
}

/* ---- attributes ------------------------------------------------------------------ */

static void read_map(tj_mprog *p, MlirAffineMap m)
{
    intptr_t n = mlirAffineMapGetNumResults(m);
    add_int(p, mlirAffineMapGetNumDims(m));
    add_int(p, n);
    for (intptr_t i = 0; i < n; i++) {
        MlirAffineExpr e = mlirAffineMapGetResult(m, i);
        if (mlirAffineExprIsADim(e))
            add_int(p, mlirAffineDimExprGetPosition(e));
        else if (mlirAffineExprIsAConstant(e) && mlirAffineConstantExprGetValue(e) == 0)
            add_int(p, TJ_MEXPR_ZERO);
        else
            add_int(p, TJ_MEXPR_OTHER);
    }
}

static int all_of(MlirAttribute arr, bool (*is)(MlirAttribute))
{
    intptr_t n = mlirArrayAttrGetNumElements(arr);
    for (intptr_t i = 0; i < n; i++)
        if (!is(mlirArrayAttrGetElement(arr, i)))
            return 0;
    return n > 0;
}

static bool is_int_array(MlirAttribute a) { return mlirAttributeIsAArray(a) && all_of(a, mlirAttributeIsAInteger); }

static void read_array(tj_mprog *p, MlirAttribute a, tj_mattr *out)
{
    intptr_t n = mlirArrayAttrGetNumElements(a);
    out->first = p->nints;
    out->count = (uint32_t)n;
    if (all_of(a, mlirAttributeIsAInteger)) {
        out->kind = TJ_MA_INTS;
        for (intptr_t i = 0; i < n; i++)
            add_int(p, mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(a, i)));
    } else if (all_of(a, mlirAttributeIsAAffineMap)) {
        out->kind = TJ_MA_MAPS;
        for (intptr_t i = 0; i < n; i++)
            read_map(p, mlirAffineMapAttrGetValue(mlirArrayAttrGetElement(a, i)));
    } else if (all_of(a, is_int_array)) {
        out->kind = TJ_MA_LISTS;
        for (intptr_t i = 0; i < n; i++) {
            MlirAttribute list = mlirArrayAttrGetElement(a, i);
            intptr_t m = mlirArrayAttrGetNumElements(list);
            add_int(p, m);
            for (intptr_t j = 0; j < m; j++)
                add_int(p, mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(list, j)));
        }
    } else {
        out->kind = TJ_MA_STRINGS;
        for (intptr_t i = 0; i < n; i++) {
            MlirAttribute e = mlirArrayAttrGetElement(a, i);
            add_int(p, mlirAttributeIsAString(e) ? add_ref(p, mlirStringAttrGetValue(e)) : attr_text(p, e));
        }
    }
}

static double dense_at(MlirAttribute a, tj_dtype dt, intptr_t i)
{
    switch (dt) {
    case TJ_DT_F32: return mlirDenseElementsAttrGetFloatValue(a, i);
    case TJ_DT_F64: return mlirDenseElementsAttrGetDoubleValue(a, i);
    case TJ_DT_BOOL: return mlirDenseElementsAttrGetBoolValue(a, i);
    case TJ_DT_I8: return mlirDenseElementsAttrGetInt8Value(a, i);
    case TJ_DT_I16: return mlirDenseElementsAttrGetInt16Value(a, i);
    case TJ_DT_I32: return mlirDenseElementsAttrGetInt32Value(a, i);
    case TJ_DT_I64: return (double)mlirDenseElementsAttrGetInt64Value(a, i);
    case TJ_DT_U8: return mlirDenseElementsAttrGetUInt8Value(a, i);
    case TJ_DT_U16: return mlirDenseElementsAttrGetUInt16Value(a, i);
    case TJ_DT_U32: return mlirDenseElementsAttrGetUInt32Value(a, i);
    case TJ_DT_U64: return (double)mlirDenseElementsAttrGetUInt64Value(a, i);
    default: return 0;
    }
}

/* Dense constants of the dtypes the C API reads (f16 and bf16 are not). */
static int read_dense(tj_mprog *p, MlirAttribute a, tj_mattr *out)
{
    int index;
    tj_dtype dt = scalar_dtype(mlirShapedTypeGetElementType(mlirAttributeGetType(a)), &index);
    if (dt == TJ_DT_INVALID || dt == TJ_DT_F16 || dt == TJ_DT_BF16)
        return 0;
    out->kind = TJ_MA_DENSE;
    out->dtype = dt;
    out->splat = mlirDenseElementsAttrIsSplat(a);
    intptr_t n = out->splat ? 1 : mlirElementsAttrGetNumElements(a);
    out->first = p->nfloats;
    out->count = (uint32_t)n;
    for (intptr_t i = 0; i < n; i++)
        if (PUSH(p, floats, nfloats, cap_floats))
            p->floats[p->nfloats++] = dense_at(a, dt, i);
    return 1;
}

static void read_attr(tj_mprog *p, MlirNamedAttribute na)
{
    if (!PUSH(p, attrs, nattrs, cap_attrs))
        return;
    tj_mattr *out = &p->attrs[p->nattrs++];
    memset(out, 0, sizeof *out);
    out->name = add_ref(p, mlirIdentifierStr(na.name));
    MlirAttribute a = na.attribute;
    if (mlirAttributeIsABool(a)) {
        out->kind = TJ_MA_INT;
        out->i = mlirBoolAttrGetValue(a);
    } else if (mlirAttributeIsAInteger(a)) {
        out->kind = TJ_MA_INT;
        out->i = mlirIntegerAttrGetValueInt(a);
    } else if (mlirAttributeIsAFloat(a)) {
        out->kind = TJ_MA_FLOAT;
        out->f = mlirFloatAttrGetValueDouble(a);
    } else if (mlirAttributeIsAString(a)) {
        out->kind = TJ_MA_STRING;
        out->str = add_ref(p, mlirStringAttrGetValue(a));
    } else if (mlirAttributeIsAFlatSymbolRef(a)) {
        out->kind = TJ_MA_STRING;
        out->str = add_ref(p, mlirFlatSymbolRefAttrGetValue(a));
    } else if (mlirAttributeIsADenseI64Array(a) || mlirAttributeIsADenseI32Array(a)) {
        int wide = mlirAttributeIsADenseI64Array(a);
        intptr_t n = mlirDenseArrayGetNumElements(a);
        out->kind = TJ_MA_INTS;
        out->first = p->nints;
        out->count = (uint32_t)n;
        for (intptr_t i = 0; i < n; i++)
            add_int(p, wide ? mlirDenseI64ArrayGetElement(a, i) : mlirDenseI32ArrayGetElement(a, i));
    } else if (mlirAttributeIsAArray(a)) {
        read_array(p, a, out);
    } else if (!(mlirAttributeIsADenseElements(a) && read_dense(p, a, out))) {
        out->kind = TJ_MA_OTHER;
        out->str = attr_text(p, a);
    }
}

/* ---- operations ------------------------------------------------------------------ */

static void read_block(reader *r, MlirBlock b, uint32_t parent);

static void read_op(reader *r, MlirOperation op, uint32_t parent)
{
    tj_mprog *p = r->p;
    if (!PUSH(p, ops, nops, cap_ops))
        return;
    uint32_t at = p->nops++;
    tj_mop o = {0};
    o.name = add_ref(p, mlirIdentifierStr(mlirOperationGetName(op)));
    locate(p, mlirOperationGetLocation(op), &o.line, &o.col, &o.loc_file);
    o.parent = parent;
    intptr_t n = mlirOperationGetNumOperands(op);
    o.operands = p->nuses;
    o.noperands = (uint32_t)n;
    for (intptr_t i = 0; i < n; i++)
        if (PUSH(p, uses, nuses, cap_uses))
            p->uses[p->nuses++] = map_get(&r->values, mlirOperationGetOperand(op, i).ptr);
    intptr_t na = mlirOperationGetNumAttributes(op);
    o.attrs = p->nattrs;
    for (intptr_t i = 0; i < na; i++)
        read_attr(p, mlirOperationGetAttribute(op, i));
    o.nattrs = p->nattrs - o.attrs;
    o.nregions = (uint32_t)mlirOperationGetNumRegions(op);
    MlirBlock body = o.nregions ? mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)) : (MlirBlock){NULL};
    for (MlirBlock blk = body; !mlirBlockIsNull(blk); blk = mlirBlockGetNextInRegion(blk))
        o.nblocks++;
    if (!mlirBlockIsNull(body)) {
        intptr_t nargs = mlirBlockGetNumArguments(body);
        o.args = p->nuses;
        o.nargs = (uint32_t)nargs;
        for (intptr_t i = 0; i < nargs; i++) {
            uint32_t id = define_value(r, mlirBlockGetArgument(body, i));
            if (PUSH(p, uses, nuses, cap_uses))
                p->uses[p->nuses++] = id;
        }
    }
    if (!p->oom)
        p->ops[at] = o;
    if (!mlirBlockIsNull(body))
        read_block(r, body, at);
    /* Results are defined after the body, which cannot use them. */
    intptr_t nres = mlirOperationGetNumResults(op);
    uint32_t first = p->nvalues;
    for (intptr_t i = 0; i < nres; i++)
        define_value(r, mlirOperationGetResult(op, i));
    if (!p->oom) {
        p->ops[at].results = first;
        p->ops[at].nresults = (uint32_t)nres;
        p->ops[at].body_end = p->nops;
    }
}

static void read_block(reader *r, MlirBlock b, uint32_t parent)
{
    for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op) && !r->p->oom;
         op = mlirOperationGetNextInBlock(op))
        read_op(r, op, parent);
}

/* ---- MLIR's diagnostics ------------------------------------------------------------ */

static MlirLogicalResult on_diagnostic(MlirDiagnostic d, void *ud)
{
    tj_mprog *p = ud;
    if (!PUSH(p, diags, ndiags, cap_diags))
        return mlirLogicalResultSuccess();
    tj_mdiag *out = &p->diags[p->ndiags++];
    uint32_t file;
    out->error = mlirDiagnosticGetSeverity(d) == MlirDiagnosticError;
    locate(p, mlirDiagnosticGetLocation(d), &out->line, &out->col, &file);
    text t = {0};
    mlirDiagnosticPrint(d, append, &t);
    out->msg = take_text(p, &t);
    return mlirLogicalResultSuccess(); /* handled: MLIR prints nothing */
}

/* ---- the entry points ------------------------------------------------------------------ */

TJ_EXPORT int tj_mprog_abi(void) { return TJ_MPROG_ABI; }

TJ_EXPORT void tj_mprog_release(tj_mprog *p)
{
    if (!p)
        return;
    free(p->ops);
    free(p->values);
    free(p->uses);
    free(p->attrs);
    free(p->ints);
    free(p->floats);
    free(p->strings);
    free(p->diags);
    memset(p, 0, sizeof *p);
}

TJ_EXPORT int tj_mprog_read(const char *file, const char *src, size_t len, tj_mprog *out)
{
    memset(out, 0, sizeof *out);
    add_string(out, "", 0); /* string 0 is "" */
    MlirDialectRegistry registry = mlirDialectRegistryCreate();
    mlirRegisterAllDialects(registry);
    MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
    mlirDialectRegistryDestroy(registry);
    mlirContextSetAllowUnregisteredDialects(ctx, true);
    MlirDiagnosticHandlerID h = mlirContextAttachDiagnosticHandler(ctx, on_diagnostic, out, NULL);
    (void)file;
    MlirModule m = mlirModuleCreateParse(ctx, (MlirStringRef){src, len});
    if (!mlirModuleIsNull(m)) {
        out->parsed = 1;
        reader r = {out, {0}, {file, strlen(file)}};
        read_block(&r, mlirModuleGetBody(m), UINT32_MAX);
        free(r.values.keys);
        free(r.values.ids);
        mlirModuleDestroy(m);
    }
    mlirContextDetachDiagnosticHandler(ctx, h);
    mlirContextDestroy(ctx);
    return 0;
}
