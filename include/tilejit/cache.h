/* The compiled-binary cache (docs/cache.md).
 *
 * - The key: BLAKE2b-256 of everything a compiled kernel depends on (the
 *   canonical text of its IR after specialization, its tile parameters, the
 *   target and arch, the PTX ISA, the driver version, tilejit's version,
 *   the options), and of nothing else.
 * - In memory: a thread-safe LRU from keys to ready-to-launch objects.
 * - On disk: one file per entry in $TILEJIT_CACHE_DIR (default
 *   ~/.cache/tilejit), written to a temporary file and renamed into place,
 *   checksummed, and evicted least recently used first above a size cap
 *   ($TILEJIT_CACHE_MAX). A missing, read-only or full directory degrades
 *   to memory only with one warning, never an error.
 *
 * Everything here is thread-safe and allocates no global state.
 */
#ifndef TILEJIT_CACHE_H
#define TILEJIT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tilejit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- BLAKE2b (RFC 7693) ------------------------------------------------ */

typedef struct tj_hash_state {
    uint64_t h[8], t[2];
    uint8_t buf[128];
    size_t fill, outlen;
} tj_hash_state;

/* outlen: digest bytes, 1 to 64 (others: 32). */
void tj_hash_init(tj_hash_state *s, size_t outlen);
void tj_hash_update(tj_hash_state *s, const void *data, size_t n);
void tj_hash_final(tj_hash_state *s, uint8_t *out);
void tj_hash(const void *data, size_t n, uint8_t *out, size_t outlen);

/* XXH64: a fast checksum against accidental damage (not for keys). */
uint64_t tj_hash64(const void *data, size_t n, uint64_t seed);

/* ---- keys ----------------------------------------------------------------- */

#define TJ_CACHE_KEY_BYTES 32
#define TJ_CACHE_KEY_HEX (2 * TJ_CACHE_KEY_BYTES + 1) /* with the NUL */

typedef struct tj_cache_key {
    uint8_t bytes[TJ_CACHE_KEY_BYTES];
} tj_cache_key;

void tj_cache_key_hex(const tj_cache_key *k, char out[TJ_CACHE_KEY_HEX]);
/* 0 when `hex` is exactly 64 hex digits. */
int tj_cache_key_parse(const char *hex, tj_cache_key *k);
int tj_cache_key_equal(const tj_cache_key *a, const tj_cache_key *b);

/* Builds a key from tagged, length-prefixed fields, so that no two
 * different field sequences hash the same bytes. The first field names
 * what is keyed ("kernel", "request", "tune"), which keeps the key spaces
 * apart. */
typedef struct tj_key_builder {
    tj_hash_state h;
} tj_key_builder;
void tj_key_begin(tj_key_builder *b, const char *space);
void tj_key_add_bytes(tj_key_builder *b, const char *field, const void *data, size_t n);
void tj_key_add_str(tj_key_builder *b, const char *field, const char *s); /* NULL: absent */
void tj_key_add_int(tj_key_builder *b, const char *field, int64_t v);
void tj_key_end(tj_key_builder *b, tj_cache_key *out);

/* What a compiled kernel depends on. */
typedef struct tj_cache_key_parts {
    const tj_kernel *ir;   /* Tile IR after specialization: printed canonically */
    const char *target;    /* "ptx", "cpu" */
    const char *arch;      /* "sm_90a"; NULL on the cpu */
    const char *ptx_isa;   /* when chosen apart from the arch; NULL: the arch's */
    int driver_version;    /* e.g. 13000; 0: not relevant */
    const char *options;   /* lowering and code generation options, as text */
    const char *tilejit_version; /* NULL: this library's, TILEJIT_VERSION */
} tj_cache_key_parts;

/* Hashes the parts, the IR's tile parameters (config) and the version.
 * Comments and formatting of the source never reach the IR text. */
void tj_cache_key_compute(const tj_cache_key_parts *p, tj_cache_key *out);

/* ---- the memory LRU --------------------------------------------------------- */

typedef struct tj_lru tj_lru;

/* Holds up to `capacity` values (1 to 2^20; NULL otherwise). retain/release
 * count the references the LRU and its callers hold (either may be NULL).
 * A NULL value is not stored (tj_lru_get's NULL means absent). */
tj_lru *tj_lru_new(uint32_t capacity, void (*retain)(void *), void (*release)(void *));
/* Releases every value it holds. */
void tj_lru_free(tj_lru *l);
/* The value under k, retained for the caller and made most recently used;
 * NULL when absent. */
void *tj_lru_get(tj_lru *l, const tj_cache_key *k);
/* Inserts (retaining v) or replaces; the least recently used value is
 * evicted (released) when full. */
void tj_lru_put(tj_lru *l, const tj_cache_key *k, void *v);
uint32_t tj_lru_count(tj_lru *l);

/* ---- the disk cache ------------------------------------------------------------ */

typedef struct tj_cache tj_cache;

typedef void (*tj_cache_warn_fn)(void *ud, const char *msg);

typedef struct tj_cache_options {
    /* NULL: $TILEJIT_CACHE_DIR, else $HOME/.cache/tilejit. "" or
     * TILEJIT_CACHE_DIR="" / TILEJIT_CACHE=off: memory only, silently. */
    const char *dir;
    /* 0: $TILEJIT_CACHE_MAX (bytes, or with a K, M or G suffix), else 1 GiB.
     * TILEJIT_CACHE_MAX=0 is a cap of 0, as in tj_cache_evict(c, 0):
     * nothing is kept on disk. */
    uint64_t max_bytes;
    /* For read-only queries (stats, list): a missing directory is not
     * created; the cache is then empty, and memory only without a warning. */
    int no_create;
} tj_cache_options;

/* Opens (creating it when missing) the cache directory. Never fails for
 * the directory's sake: when it cannot be used the cache keeps working in
 * memory only and records one warning. NULL only when out of memory. */
tj_cache *tj_cache_open(const tj_cache_options *opt);
void tj_cache_close(tj_cache *c);

/* The directory entries live in ($DIR/v1), or NULL when memory only. */
const char *tj_cache_dir(const tj_cache *c);
uint64_t tj_cache_max_bytes(const tj_cache *c);
int tj_cache_readable(tj_cache *c);
int tj_cache_writable(tj_cache *c);
/* The one warning about degrading to memory only (or a bad setting), or
 * NULL. A handler set here receives it (now when already given, else when
 * it happens); without one it is only kept. */
const char *tj_cache_warning(tj_cache *c);
void tj_cache_set_warning_handler(tj_cache *c, tj_cache_warn_fn fn, void *ud);

typedef enum tj_cache_kind {
    TJ_CACHE_KERNEL = 1, /* metadata, PTX and cubin of one compiled kernel */
    TJ_CACHE_TUNE = 2,   /* one configuration's timing (autotune.h) */
} tj_cache_kind;

/* An entry: metadata text and two binary sections. A loaded entry owns
 * one buffer holding all three (free with tj_cache_entry_free). */
typedef struct tj_cache_entry {
    tj_cache_kind kind;
    tj_cache_key key;
    const char *meta; /* NUL-terminated text, "NAME VALUE" lines */
    size_t meta_len;
    const void *ptx;
    size_t ptx_len;
    const void *bin;
    size_t bin_len;
    void *storage;
} tj_cache_entry;

/* Writes the entry atomically (temporary file, then rename), then evicts
 * least recently used entries above the size cap. 0 when stored; 1 when
 * not: memory only, a cap of 0, or writing failed. A directory that takes
 * no files (read-only, full) makes the cache memory only with its one
 * warning; a failure of this entry alone (its path taken by a directory,
 * its temporary file removed by someone else) skips only this store. */
int tj_cache_store(tj_cache *c, const tj_cache_entry *e);
/* 0 and the entry when a valid one of that kind and key exists (its
 * access time is updated); 1 when not. A truncated, garbled or foreign
 * file, or anything but a regular file (a FIFO is never opened for a
 * blocking read), is removed and counted in stats.dropped. */
int tj_cache_load(tj_cache *c, tj_cache_kind kind, const tj_cache_key *k, tj_cache_entry *out);
/* Removes the entry (e.g. one whose contents a caller found unusable). */
void tj_cache_drop(tj_cache *c, const tj_cache_key *k);
void tj_cache_entry_free(tj_cache_entry *e);

/* The value of line NAME in metadata text, copied into buf; 0 when found
 * (and it fits). */
int tj_cache_meta_get(const char *meta, const char *name, char *buf, size_t n);
/* The same in place, of any length: the value's start (not NUL-terminated)
 * and *len, or NULL. */
const char *tj_cache_meta_find(const char *meta, const char *name, size_t *len);

typedef struct tj_cache_stats {
    /* the directory, by scanning it */
    uint64_t entries, bytes, kernels, tune_records, temp_files;
    /* this cache object's own counts */
    uint64_t hits, misses, stores, dropped, evicted;
} tj_cache_stats;
int tj_cache_stats_get(tj_cache *c, tj_cache_stats *out);

/* One entry as `tilejit cache list` shows it. */
typedef struct tj_cache_item {
    tj_cache_key key;
    tj_cache_kind kind; /* 0: unreadable or invalid */
    uint64_t bytes;
    int64_t last_use;   /* seconds since the epoch */
    char name[64];      /* kernel name or tuned configuration */
    char detail[96];    /* arch, threads, shared memory / time */
} tj_cache_item;
/* Calls fn for every entry, least recently used first; returns the count
 * (or -1 when memory only). fn returning non-zero stops the walk. */
int tj_cache_list(tj_cache *c, int (*fn)(void *ud, const tj_cache_item *it), void *ud);
/* Removes every entry, whatever is not a regular file at an entry's path
 * (a FIFO, an empty directory), and stale temporary files (see
 * tj_cache_evict); *removed counts entries. Temporary files other
 * processes are writing stay. 0 on success. */
int tj_cache_clear(tj_cache *c, uint64_t *removed);
/* Removes least recently used entries until the total is at most
 * max_bytes (0: all of them), and stale temporary files: untouched for a
 * minute and their process gone from this machine, or untouched for an
 * hour; returns how many entries went. */
uint64_t tj_cache_evict(tj_cache *c, uint64_t max_bytes);

#ifdef __cplusplus
}
#endif
#endif
