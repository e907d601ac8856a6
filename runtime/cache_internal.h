/* The disk cache's private parts, shared by runtime/cache_*.c. */
#ifndef TJ_CACHE_INTERNAL_H
#define TJ_CACHE_INTERNAL_H

#include <pthread.h>

#include "tilejit/cache.h"

struct tj_cache {
    pthread_mutex_t lock; /* guards everything below but `dir` */
    char *dir;            /* $ROOT/v1; NULL: memory only */
    int readable, writable;
    uint64_t max_bytes;   /* 0: nothing is kept (stores are evicted at once) */
    char *warning;        /* the first warning; later ones are dropped */
    int delivered;        /* the handler has seen it */
    tj_cache_warn_fn warn_fn;
    void *warn_ud;
    uint64_t hits, misses, stores, dropped, evicted;
    uint64_t tmp_serial;  /* names this process's temporary files */
};

/* Entry files are DIR/HEX.tjc; temporary ones DIR/HEX.tjc.tmp.PID.N. */
#define TJ_CACHE_SUFFIX ".tjc"
#define TJ_CACHE_TMP_MARK ".tjc.tmp."
enum { TJ_CACHE_PATH_MAX = 4096, TJ_CACHE_DIR_MAX = 3900 };

/* Files larger than this are not entries (and are never read whole). */
#define TJ_CACHE_ENTRY_MAX ((uint64_t)1 << 30)

/* ---- cache_entry.c: the file format ---- */

/* Serializes e: header, metadata, PTX, binary, checksum. malloc'ed; NULL
 * when out of memory, or when the sizes overflow or the entry would be over
 * TJ_CACHE_ENTRY_MAX (no load would read it). */
void *tj_cache_entry_encode(const tj_cache_entry *e, size_t *size);
/* Checks an image read from a file and points out's sections into it
 * (out->storage stays NULL). kind 0 and key NULL accept any. NULL when
 * valid, else why not ("truncated", "checksum mismatch", ...). */
const char *tj_cache_entry_decode(const void *image, size_t size, tj_cache_kind kind, const tj_cache_key *key,
                                  tj_cache_entry *out);

/* ---- cache_disk.c ---- */

/* DIR/HEX.tjc into buf (TJ_CACHE_PATH_MAX bytes). */
void tj_cache_entry_path(const tj_cache *c, const tj_cache_key *k, char *buf);
/* Records the warning when it is the first, and hands it to the handler. */
void tj_cache_warn(tj_cache *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Reads a whole file (at most TJ_CACHE_ENTRY_MAX bytes) into a malloc'ed
 * buffer; 0 on success. */
int tj_cache_read_file(int fd, uint64_t size, void **out);
/* Opens PATH for reading only when it is a regular file, without blocking
 * (a FIFO at an entry's path must not hang the cache): the descriptor and
 * *st, or -1 (errno EINVAL for a file of another kind: *st says which). */
struct stat;
int tj_cache_open_regular(const char *path, struct stat *st);
/* Removes what is at PATH, a file of any kind or (is_dir) an empty
 * directory; 0 when it is gone. */
int tj_cache_remove(const char *path, int is_dir);

#endif
