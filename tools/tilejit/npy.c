/* NumPy .npy reading and writing (see npy.h). The header is a Python dict
 * literal; this parses exactly the subset np.save writes and rejects
 * anything else with a message saying what was expected. */
#define _POSIX_C_SOURCE 200809L
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { NPY_MAX_HEADER = 1 << 20 };
static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static int host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

char npy_host_order(void) { return host_little_endian() ? '<' : '>'; }

uint64_t npy_bytes(uint64_t numel, int size, int *overflow)
{
    *overflow = size > 0 && numel > UINT64_MAX / (uint64_t)size;
    return *overflow ? 0 : numel * (uint64_t)size;
}

/* ---- dtype descriptors ------------------------------------------------------ */

typedef struct npy_kind {
    char kind;
    int size;
    tj_dtype dtype;
} npy_kind;

static const npy_kind npy_kinds[] = {
    {'b', 1, TJ_DT_BOOL}, {'i', 1, TJ_DT_I8},  {'i', 2, TJ_DT_I16}, {'i', 4, TJ_DT_I32},
    {'i', 8, TJ_DT_I64},  {'u', 1, TJ_DT_U8},  {'u', 2, TJ_DT_U16}, {'u', 4, TJ_DT_U32},
    {'u', 8, TJ_DT_U64},  {'f', 2, TJ_DT_F16}, {'f', 4, TJ_DT_F32}, {'f', 8, TJ_DT_F64},
    {'V', 2, TJ_DT_BF16},
};

/* "<f4" -> f32 and '<'. 0 on success. */
static int parse_descr(const char *s, size_t len, tj_dtype *dt, char *order)
{
    if (len < 3 || len > 4 || !strchr("<>|=", s[0]))
        return -1;
    int size = 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        size = size * 10 + (s[i] - '0');
    }
    for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++) {
        if (npy_kinds[i].kind != s[1] || npy_kinds[i].size != size)
            continue;
        *dt = npy_kinds[i].dtype;
        char o = s[0] == '=' ? npy_host_order() : s[0];
        /* One-byte types have no order; a 2-byte void (bf16 bits) is taken
         * as little-endian, like every machine that writes them. */
        *order = size == 1 ? '|' : o == '|' ? '<' : o;
        return 0;
    }
    return -1;
}

static const char *descr_kind(tj_dtype dt, int *size)
{
    for (size_t i = 0; i < sizeof npy_kinds / sizeof npy_kinds[0]; i++)
        if (npy_kinds[i].dtype == dt) {
            *size = npy_kinds[i].size;
            return &npy_kinds[i].kind;
        }
    return NULL;
}

/* ---- the header dict ------------------------------------------------------ */

typedef struct hdr_parser {
    const char *p, *end;
    char err[160];
} hdr_parser;

static int hdr_fail(hdr_parser *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->err, sizeof h->err, fmt, ap);
    va_end(ap);
    return -1;
}

static void hdr_skip_space(hdr_parser *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static int hdr_accept(hdr_parser *h, char ch)
{
    hdr_skip_space(h);
    if (h->p < h->end && *h->p == ch) {
        h->p++;
        return 1;
    }
    return 0;
}

static int hdr_expect(hdr_parser *h, char ch, const char *where)
{
    if (hdr_accept(h, ch))
        return 0;
    return hdr_fail(h, "expected '%c' %s", ch, where);
}

/* A quoted Python string without escapes. */
static int hdr_string(hdr_parser *h, const char **s, size_t *len)
{
    hdr_skip_space(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
        return hdr_fail(h, "expected a quoted string");
    char quote = *h->p++;
    const char *start = h->p;
    while (h->p < h->end && *h->p != quote) {
        if (*h->p == '\\' || *h->p == '\n')
            return hdr_fail(h, "unsupported character in a string");
        h->p++;
    }
    if (h->p >= h->end)
        return hdr_fail(h, "unterminated string");
    *s = start;
    *len = (size_t)(h->p - start);
    h->p++;
    return 0;
}

static int hdr_word(hdr_parser *h, const char *word)
{
    size_t n = strlen(word);
    hdr_skip_space(h);
    if ((size_t)(h->end - h->p) >= n && !memcmp(h->p, word, n)) {
        h->p += n;
        return 1;
    }
    return 0;
}

static int hdr_shape(hdr_parser *h, npy_array *a)
{
    if (hdr_expect(h, '(', "to start 'shape'"))
        return -1;
    a->rank = 0;
    while (!hdr_accept(h, ')')) {
        hdr_skip_space(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9')
            return hdr_fail(h, "expected a non-negative integer in 'shape'");
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return hdr_fail(h, "a dimension in 'shape' is too large");
            v = v * 10 + (*h->p++ - '0');
        }
        if (h->p < h->end && *h->p == 'L') /* Python 2 longs */
            h->p++;
        if (a->rank == TJ_MAX_RANK)
            return hdr_fail(h, "more than %d dimensions", TJ_MAX_RANK);
        a->shape[a->rank++] = v;
        if (!hdr_accept(h, ',')) {
            if (hdr_expect(h, ')', "to end 'shape'"))
                return -1;
            break;
        }
    }
    return 0;
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

static int hdr_entry(hdr_parser *h, npy_array *a, unsigned *seen, int *fortran)
{
    const char *key;
    size_t klen;
    if (hdr_string(h, &key, &klen) || hdr_expect(h, ':', "after a key"))
        return -1;
    unsigned bit = klen == 5 && !memcmp(key, "descr", 5)           ? KEY_DESCR
                   : klen == 13 && !memcmp(key, "fortran_order", 13) ? KEY_FORTRAN
                   : klen == 5 && !memcmp(key, "shape", 5)           ? KEY_SHAPE
                                                                     : 0;
    if (!bit)
        return hdr_fail(h, "unexpected key '%.*s'", (int)(klen > 40 ? 40 : klen), key);
    if (*seen & bit)
        return hdr_fail(h, "key '%.*s' appears twice", (int)klen, key);
    *seen |= bit;
    if (bit == KEY_SHAPE)
        return hdr_shape(h, a);
    if (bit == KEY_FORTRAN) {
        if (hdr_word(h, "True"))
            *fortran = 1;
        else if (hdr_word(h, "False"))
            *fortran = 0;
        else
            return hdr_fail(h, "expected True or False for 'fortran_order'");
        return 0;
    }
    const char *d;
    size_t dlen;
    hdr_skip_space(h);
    if (h->p < h->end && *h->p == '[')
        return hdr_fail(h, "structured dtypes are not supported");
    if (hdr_string(h, &d, &dlen))
        return -1;
    if (parse_descr(d, dlen, &a->dtype, &a->order))
        return hdr_fail(h, "unsupported dtype '%.*s' (supported: b1 i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8, "
                           "and V2 or u2 for bf16)", (int)(dlen > 16 ? 16 : dlen), d);
    return 0;
}

static int parse_header(hdr_parser *h, npy_array *a)
{
    unsigned seen = 0;
    int fortran = 0;
    if (hdr_expect(h, '{', "at the start of the header"))
        return -1;
    while (!hdr_accept(h, '}')) {
        if (hdr_entry(h, a, &seen, &fortran))
            return -1;
        if (!hdr_accept(h, ',')) {
            if (hdr_expect(h, '}', "after a header entry"))
                return -1;
            break;
        }
    }
    hdr_skip_space(h);
    if (h->p != h->end)
        return hdr_fail(h, "unexpected text after the header dict");
    if (seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
        return hdr_fail(h, "the header lacks '%s'", !(seen & KEY_DESCR) ? "descr"
                                                    : !(seen & KEY_SHAPE) ? "shape" : "fortran_order");
    if (fortran)
        return hdr_fail(h, "Fortran-order arrays are not supported (save np.ascontiguousarray(x))");
    return 0;
}

/* ---- reading ------------------------------------------------------------------ */

static void swap_bytes(void *data, uint64_t numel, int size)
{
    unsigned char *p = data;
    for (uint64_t i = 0; i < numel; i++, p += size)
        for (int j = 0; j < size / 2; j++) {
            unsigned char t = p[j];
            p[j] = p[size - 1 - j];
            p[size - 1 - j] = t;
        }
}

static int needs_swap(char order)
{
    return order != '|' && (order == '<') != host_little_endian();
}

/* Magic, version and header length; returns the header length or -1. */
static long read_preamble(tj_ctx *c, FILE *f, const char *path, const char *what)
{
    unsigned char pre[12];
    size_t got = fread(pre, 1, 8, f);
    if (got != 8 && ferror(f)) {
        cli_file_error(c, path, "%s: cannot read: %s", what, strerror(errno));
        return -1;
    }
    if (got != 8 || memcmp(pre, npy_magic, 6)) {
        cli_file_error(c, path, "%s: not a .npy file (bad magic; expected \\x93NUMPY)", what);
        return -1;
    }
    int major = pre[6], minor = pre[7];
    if ((major < 1 || major > 3) || minor != 0) {
        cli_file_error(c, path, "%s: unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)",
                       what, major, minor);
        return -1;
    }
    size_t lenbytes = major == 1 ? 2 : 4;
    if (fread(pre + 8, 1, lenbytes, f) != lenbytes) {
        cli_file_error(c, path, "%s: truncated .npy header", what);
        return -1;
    }
    unsigned long len = pre[8] | (unsigned long)pre[9] << 8;
    if (lenbytes == 4)
        len |= (unsigned long)pre[10] << 16 | (unsigned long)pre[11] << 24;
    if (len > NPY_MAX_HEADER) {
        cli_file_error(c, path, "%s: .npy header of %lu bytes is too large", what, len);
        return -1;
    }
    return (long)len;
}

static void report_truncated(tj_ctx *c, const char *path, const char *what, uint64_t want, uint64_t have)
{
    cli_file_error(c, path, "%s: array data truncated: the header promises %llu bytes, the file holds %llu", what,
                   (unsigned long long)want, (unsigned long long)have);
}

/* The bytes left in f when it is a regular file; -1 for a pipe or the like. */
static int64_t bytes_left(FILE *f)
{
    struct stat st;
    long pos = ftell(f);
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || pos < 0)
        return -1;
    return st.st_size > pos ? (int64_t)st.st_size - pos : 0;
}

/* Reads what a pipe delivers, up to `bytes`, into a buffer that grows with
 * it: a header claiming gigabytes costs nothing until they arrive. Returns
 * a malloc'ed buffer (NULL when out of memory) and *got. */
static unsigned char *read_growing(FILE *f, uint64_t bytes, uint64_t *got)
{
    size_t cap = 0;
    unsigned char *buf = NULL;
    *got = 0;
    while (*got < bytes) {
        if (*got == cap) {
            uint64_t want = cap ? 2 * (uint64_t)cap : 1 << 16;
            cap = (size_t)(want < bytes ? want : bytes);
            unsigned char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + *got, 1, cap - (size_t)*got, f);
        if (!n)
            break;
        *got += n;
    }
    return buf ? buf : malloc(1);
}

/* The array's data: exactly `bytes`, checked against a regular file's size
 * before anything is allocated, and read as it arrives from anything else. */
static int read_data(tj_ctx *c, FILE *f, const char *path, const char *what, npy_array *a, uint64_t bytes)
{
    int64_t left = bytes_left(f);
    if (bytes > SIZE_MAX - 64) {
        cli_file_error(c, path, "%s: array of %llu bytes is too large", what, (unsigned long long)bytes);
        return -1;
    }
    if (left >= 0 && (uint64_t)left < bytes) {
        report_truncated(c, path, what, bytes, (uint64_t)left);
        return -1;
    }
    uint64_t got;
    if (left >= 0) {
        a->data = tj_alloc(c, bytes ? (size_t)bytes : 1);
        got = fread(a->data, 1, (size_t)bytes, f);
    } else {
        unsigned char *buf = read_growing(f, bytes, &got);
        if (!buf) {
            cli_file_error(c, path, "%s: out of memory reading %llu bytes", what, (unsigned long long)bytes);
            return -1;
        }
        if (got == bytes) {
            a->data = tj_alloc(c, bytes ? (size_t)bytes : 1);
            memcpy(a->data, buf, (size_t)bytes);
        }
        free(buf);
    }
    if (got != bytes && ferror(f)) { /* EIO, EISDIR: not a short file */
        cli_file_error(c, path, "%s: cannot read the array data: %s", what, strerror(errno));
        return -1;
    }
    if (got != bytes) {
        report_truncated(c, path, what, bytes, got);
        return -1;
    }
    if (fgetc(f) != EOF) {
        cli_file_error(c, path, "%s: unexpected data after the array (the header promises %llu bytes)", what,
                       (unsigned long long)bytes);
        return -1;
    }
    if (needs_swap(a->order))
        swap_bytes(a->data, a->numel, tj_dtype_size(a->dtype));
    return 0;
}

/* Elements and bytes from the header's shape; every dim obeys the size rule
 * (so a 2^31-element array is refused before its data is read). */
static int array_bytes(tj_ctx *c, const char *path, const char *what, npy_array *a, uint64_t *bytes)
{
    a->numel = 1;
    for (int i = 0; i < a->rank; i++) {
        if (a->shape[i] > CLI_MAX_DIM) {
            cli_file_error(c, path, "%s: dim %d is %lld; sizes must be in [0, 2^31)", what, i,
                           (long long)a->shape[i]);
            return -1;
        }
        uint64_t d = (uint64_t)a->shape[i];
        if (d && a->numel > UINT64_MAX / d) {
            cli_file_error(c, path, "%s: the shape in the header is too large", what);
            return -1;
        }
        a->numel *= d;
    }
    int overflow;
    *bytes = npy_bytes(a->numel, tj_dtype_size(a->dtype), &overflow);
    if (overflow)
        cli_file_error(c, path, "%s: the shape in the header is too large", what);
    return overflow ? -1 : 0;
}

int npy_read_stream(tj_ctx *c, FILE *f, const char *path, const char *what, npy_array *a)
{
    memset(a, 0, sizeof *a);
    long hlen = read_preamble(c, f, path, what);
    if (hlen < 0)
        return -1;
    char *text = tj_alloc(c, (size_t)hlen + 1);
    if (fread(text, 1, (size_t)hlen, f) != (size_t)hlen) {
        cli_file_error(c, path, "%s: truncated .npy header", what);
        return -1;
    }
    hdr_parser h = {.p = text, .end = text + hlen};
    if (parse_header(&h, a)) {
        cli_file_error(c, path, "%s: bad .npy header: %s", what, h.err);
        return -1;
    }
    uint64_t bytes;
    return array_bytes(c, path, what, a, &bytes) || read_data(c, f, path, what, a, bytes) ? -1 : 0;
}

int npy_read(tj_ctx *c, const char *path, const char *what, npy_array *a)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_file_error(c, path, "%s: cannot open: %s", what, strerror(errno));
        return -1;
    }
    int rc = npy_read_stream(c, f, path, what, a);
    fclose(f);
    return rc;
}

/* ---- writing ------------------------------------------------------------------ */

/* The header dict, padded with spaces and a newline so the data starts at a
 * multiple of 64 bytes (after the 10-byte preamble of version 1.0). With at
 * most 6 dims it stays far below 256 bytes. Returns its length. */
static size_t header_text(const npy_array *a, char *buf, size_t cap)
{
    int size = 0;
    const char *kind = descr_kind(a->dtype, &size);
    char order = size == 1 ? '|' : a->order == '>' ? '>' : a->dtype == TJ_DT_BF16 ? '|' : '<';
    size_t n = (size_t)snprintf(buf, cap, "{'descr': '%c%c%d', 'fortran_order': False, 'shape': (", order, *kind,
                                size);
    for (int i = 0; i < a->rank; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%lld%s", (long long)a->shape[i],
                              a->rank == 1 ? "," : i + 1 < a->rank ? ", " : "");
    n += (size_t)snprintf(buf + n, cap - n, "), }");
    while ((10 + n + 1) % 64)
        buf[n++] = ' ';
    buf[n++] = '\n';
    return n;
}

/* Writes the data in the file's byte order, a bounded chunk at a time. */
static int write_data(FILE *f, const npy_array *a)
{
    int size = tj_dtype_size(a->dtype);
    if (!needs_swap(a->order))
        return fwrite(a->data, (size_t)size, (size_t)a->numel, f) == a->numel ? 0 : -1;
    unsigned char chunk[4096];
    const unsigned char *src = a->data;
    uint64_t per = sizeof chunk / (size_t)size;
    for (uint64_t i = 0; i < a->numel; i += per) {
        uint64_t n = a->numel - i < per ? a->numel - i : per;
        memcpy(chunk, src + i * (uint64_t)size, (size_t)(n * (uint64_t)size));
        swap_bytes(chunk, n, size);
        if (fwrite(chunk, (size_t)size, (size_t)n, f) != n)
            return -1;
    }
    return 0;
}

int npy_write(FILE *f, const npy_array *a)
{
    int size = 0;
    if (!descr_kind(a->dtype, &size))
        return -1;
    unsigned char head[10 + 320];
    size_t len = header_text(a, (char *)head + 10, sizeof head - 10);
    memcpy(head, npy_magic, 6);
    head[6] = 1; /* version 1.0 */
    head[7] = 0;
    head[8] = (unsigned char)(len & 0xff);
    head[9] = (unsigned char)(len >> 8);
    if (fwrite(head, 1, 10 + len, f) != 10 + len)
        return -1;
    return write_data(f, a);
}
