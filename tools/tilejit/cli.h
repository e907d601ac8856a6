/* The `tilejit` command line: what the subcommands share. */
#ifndef TILEJIT_CLI_H
#define TILEJIT_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "tilejit/tilejit.h"

/* Exit statuses (CLI.md). */
enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2 };

/* tj_check_args's size rule, every dim in [0, 2^31), checked where a size
 * first arrives (a .npy header, --shape) so that nothing that large is
 * allocated or read before the error. */
#define CLI_MAX_DIM INT32_MAX

/* Which options a subcommand accepts (cli_command.options). */
enum {
    OPT_KERNEL = 1 << 0, /* -k NAME */
    OPT_TARGET = 1 << 1, /* --target T */
    OPT_DEFINE = 1 << 2, /* -D NAME=INT */
    OPT_SHAPE = 1 << 3,  /* --shape NAME=INT */
    OPT_OUTPUT = 1 << 4, /* -o OUT */
    OPT_DEVICE = 1 << 5, /* --device D */
    OPT_CHECK = 1 << 6,  /* --check */
    OPT_TIME = 1 << 7,   /* --time */
    OPT_RANDOM = 1 << 8, /* --random[=SEED] */
    OPT_ARGS = 1 << 9,   /* ARG=VALUE after FILE */
    OPT_FILES = 1 << 10, /* several FILEs (check) rather than one */
    OPT_TUNE = 1 << 11,  /* --tune */
    OPT_CONTIGUOUS = 1 << 12, /* --contiguous */
    OPT_LAUNCH = 1 << 13, /* --grid, --block, --shared (CUDA C kernels) */
};

/* ARG=VALUE as written on the command line. */
typedef struct cli_kv {
    const char *name;
    const char *value;
} cli_kv;

typedef struct cli_command cli_command;

typedef struct cli_opts {
    const cli_command *cmd; /* the subcommand, for usage errors */
    const char **files;
    uint32_t nfiles;
    const char *kernel;
    const char *target;
    const char *output;
    const char *device;
    tj_binding *defines; /* -D */
    uint32_t ndefines;
    tj_binding *shapes;  /* --shape */
    uint32_t nshapes;
    cli_kv *args;        /* ARG=VALUE */
    uint32_t nargs;
    int check, time, random;
    int tune;            /* --tune: time untuned configurations first */
    int contiguous;      /* --contiguous: compile for contiguous, aligned tensors */
    uint64_t seed;       /* --random=SEED; 0 by default */
    const char *grid, *block, *shared; /* --grid X[,Y,Z], --block X[,Y,Z], --shared BYTES */
    int help;
} cli_opts;

struct cli_command {
    const char *name;
    int (*run)(tj_ctx *c, const cli_opts *o);
    unsigned options;    /* OPT_* */
    const char *synopsis;
    const char *help;    /* the option list printed by `tilejit CMD --help` */
};

/* options.c: parses argv after the subcommand name. Returns CLI_OK, or
 * CLI_USAGE after printing what was wrong. */
int cli_parse_options(tj_ctx *c, const cli_command *cmd, int argc, char **argv, cli_opts *o);
/* Prints `tilejit CMD: error: MSG` and a pointer to --help; returns CLI_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Strict decimal integer (optional sign); 0 on success. */
int cli_parse_int(const char *s, int64_t *out);
int cli_is_identifier(const char *s, size_t len);

/* files.c */
/* Reads a whole file ("-": stdin) into arena memory with a NUL after it.
 * Reports "cannot read" errors naming the path; NULL on failure. */
char *cli_read_file(tj_ctx *c, const char *path, size_t *len);
/* The name diagnostics give a source path: "<stdin>" for "-". */
const char *cli_source_name(const char *path);
/* Reports an error about a file as `PATH: error: ...`. */
void cli_file_error(tj_ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void cli_file_note(tj_ctx *c, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* replace.c: replacing files all or nothing (docs/limits.md). prepare
 * checks an output (a regular file or a new one, writable; a symbolic link
 * is followed to the file it names); open makes the temporary file beside
 * that file; close flushes it; commit_all renames every prepared file into
 * place or, when one rename fails, puts back those already replaced.
 * Errors are reported naming the path; 0 on success. */
typedef struct cli_tmpfile {
    const char *path;   /* as given */
    const char *target; /* the file replaced: path, or where its link leads */
    char *tmp, *backup;
    FILE *f;
    int mode;           /* the target's permission bits, or -1 when it is new */
    int exists;
    dev_t dev;          /* the target's identity when it exists, else its */
    ino_t ino;          /* directory's (0 when that cannot be read) ... */
    const char *base;   /* ... and its name there, for a new file */
} cli_tmpfile;
int cli_tmp_prepare(tj_ctx *c, const char *path, cli_tmpfile *t);
int cli_tmp_same_file(const cli_tmpfile *a, const cli_tmpfile *b);
int cli_tmp_open(tj_ctx *c, cli_tmpfile *t);
int cli_tmp_close(tj_ctx *c, cli_tmpfile *t);
int cli_tmp_commit_all(tj_ctx *c, cli_tmpfile *t, uint32_t n);
void cli_tmp_discard(cli_tmpfile *t);
/* Moves a tj_buf's text into the arena (and frees the buffer). */
const char *cli_buf_take(tj_ctx *c, tj_buf *b);
/* Writes text to PATH atomically ("-": stdout). */
int cli_write_text(tj_ctx *c, const char *path, const char *text, size_t len);

/* kernel.c: the path from a .tj file to Tile IR, shared by emit and run. */
typedef struct cli_kernel {
    const char *path;
    const char *text; /* the source, for devices that compile it themselves */
    size_t len;
    const tj_program *prog;
    int index;
    const tj_param *params;
    uint32_t nparams;
    const tj_tile_param *tparams;
    uint32_t ntparams;
} cli_kernel;
/* Reads and parses PATH and finds kernel NAME (an unknown name lists the
 * kernels there). 0 on success. */
int cli_open_kernel(tj_ctx *c, const char *path, const char *name, cli_kernel *k);
/* -D names must be tile parameters and --shape names dim names. */
int cli_check_names(tj_ctx *c, const cli_kernel *k, const cli_opts *o);
/* Selects the configuration (-D values kept, the rest the first that
 * satisfies the where clauses) and builds verified Tile IR. `dims` NULL:
 * shapes unknown (where clauses on dims are skipped). */
tj_kernel *cli_build_kernel(tj_ctx *c, const cli_kernel *k, const tj_binding *defines,
                            uint32_t ndefines, const tj_binding *dims, uint32_t ndims);
/* Marks written[i] for every tensor parameter i the kernel stores to or
 * updates atomically (all of them when a store's tensor is not traceable). */
void cli_written_params(const tj_kernel *k, unsigned char *written);
/* "X: f32[M, 128]" for messages; cli_param_list joins them with ", ". */
const char *cli_param_decl(tj_ctx *c, const tj_param *p);
const char *cli_param_list(tj_ctx *c, const cli_kernel *k);

/* cuda_c.c: FILE.cu (CUDA C through NVRTC) for check, emit and run. */
int cli_is_cuda_c(const char *path);
int cli_check_cuda_c(tj_ctx *c, const char *path);
int cli_emit_cuda_c(tj_ctx *c, const cli_opts *o);
int cli_run_cuda_c(tj_ctx *c, const cli_opts *o);

/* mlir.c: FILE.mlir (MLIR import, tilejit/mlir.h) for check, emit and run. */
int cli_is_mlir(const char *path);
int cli_check_mlir(tj_ctx *c, const char *path);
int cli_emit_mlir(tj_ctx *c, const cli_opts *o);
int cli_run_mlir(tj_ctx *c, const cli_opts *o);

/* The subcommands. */
int cmd_check(tj_ctx *c, const cli_opts *o);
int cmd_emit(tj_ctx *c, const cli_opts *o);
int cmd_run(tj_ctx *c, const cli_opts *o);
int cmd_devices(tj_ctx *c, const cli_opts *o);
int cmd_tune(tj_ctx *c, const cli_opts *o);  /* cmd_tune.c */
int cmd_cache(tj_ctx *c, const cli_opts *o); /* cmd_cache.c */

/* cmd_cache.c: the disk cache (tilejit/cache.h) with its warning as a
 * diagnostic of c; NULL when out of memory. create 0: a missing directory
 * stays missing (for queries). */
struct tj_cache *cli_open_cache(tj_ctx *c, int create);

#endif
