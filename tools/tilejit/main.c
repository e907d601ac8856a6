/* `tilejit`: subcommand dispatch, usage and help. Exit status 0 when all
 * went well, 1 after an error, 2 for a malformed command line. */
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
    {"check", cmd_check, OPT_FILES, "check FILE...",
     "Parses, type-checks and verifies every kernel of each FILE ('-': stdin).\n"
     "Diagnostics go to stderr as FILE:LINE:COL: error: ... with the source line.\n"
     "A CUDA C file (FILE.cu) is compiled by NVRTC, which must be installed.\n"
     "An MLIR file (FILE.mlir) is parsed by MLIR 22; every op tilejit does not import\n"
     "is an error at its location, and every function is built into an array graph.\n"},
    {"emit", cmd_emit, OPT_KERNEL | OPT_TARGET | OPT_DEFINE | OPT_SHAPE | OPT_OUTPUT | OPT_CONTIGUOUS,
     "emit FILE -k KERNEL --target TARGET [-D NAME=INT]... [--shape NAME=INT]... [--contiguous] [-o OUT]",
     "Prints one kernel compiled for TARGET:\n"
     "  ir            Tile IR from the front end\n"
     "  ir-opt        Tile IR after the optimization passes\n"
     "  simt          SIMT IR: what one thread does, after lowering\n"
     "  ptx[:sm_XX]   PTX for an NVIDIA arch (default sm_90a; e.g. ptx:sm_80)\n"
     "  msl           Metal Shading Language (Metal 3)\n"
     "  llvm          the cpu back end's LLVM IR for this host, before LLVM's passes\n"
     "A CUDA C file (FILE.cu) has one target, ptx[:sm_XX]: the PTX NVRTC makes (no GPU\n"
     "needed); KERNEL may be 'NAME<TEMPLATE ARGS>' and -D defines macros.\n"
     "An MLIR file (FILE.mlir): KERNEL is a function; the targets are graph (the array\n"
     "graph it imports as), fuse (its fused groups), tile (their tilings) and emit (the\n"
     "kernel of each group, in the tiled language).\n"
     "Options:\n"
     "  -k, --kernel NAME     the kernel to compile\n"
     "  --target TARGET       what to print (above)\n"
     "  -D NAME=INT[,...]     bind tile parameters (const/tune names); the others take\n"
     "                        the first configuration that satisfies the where clauses\n"
     "  --shape NAME=INT[,...] bind dim names (needed where a dim is a tile extent)\n"
     "  --contiguous          compile as the JIT does for contiguous, 16-byte aligned\n"
     "                        tensors (vector accesses); needs every dim (--shape)\n"
     "  -o, --output OUT      write to OUT instead of stdout\n"},
    {"run", cmd_run,
     OPT_KERNEL | OPT_DEVICE | OPT_DEFINE | OPT_SHAPE | OPT_OUTPUT | OPT_CHECK | OPT_TIME | OPT_RANDOM | OPT_ARGS |
         OPT_TUNE | OPT_LAUNCH,
     "run FILE -k KERNEL [--device cpu|interp|cuda[:N]|metal] [-D NAME=INT]... [--shape NAME=INT]...\n"
     "            [--check] [--time] [--tune] [--random[=SEED] [-o DIR]] [ARG=VALUE]...\n"
     "  tilejit run FILE.cu -k KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--shared BYTES] [ARG=VALUE]...\n"
     "  tilejit run FILE.mlir -k FUNCTION [--device cpu|interp|cuda[:N]] [--check] [--time]\n"
     "            [--random[=SEED]] [-o DIR] [argI=PATH.npy]...",
     "Runs one kernel. Tensor parameters: ARG=PATH.npy (C order). Tensors the kernel\n"
     "stores to are written back to their files, same shape and dtype. f32 arrays\n"
     "for f16/bf16 parameters (and back) are converted, with a note; bf16 is also\n"
     "read from '<u2' (raw bits) or '|V2' arrays. Scalars: ARG=NUMBER. Dim names take\n"
     "their sizes from the arrays.\n"
     "Options:\n"
     "  -k, --kernel NAME     the kernel to run\n"
     "  --device DEVICE       cpu (native code through LLVM; the interpreter, with a\n"
     "                        note, where tilejit was built without it), interp (the\n"
     "                        reference interpreter), cuda (the default when a GPU is\n"
     "                        present; cuda:N runs on GPU N, see 'tilejit devices'),\n"
     "                        metal\n"
     "  -D NAME=INT[,...]     bind tile parameters (others: the tuned configuration when\n"
     "                        'tilejit tune' stored one, else the first valid one)\n"
     "  --tune                tune first: time the configurations without a stored time\n"
     "  --shape NAME=INT[,...] sizes of dim names for tensors made by --random\n"
     "  --check               also run the front end's unoptimized IR in the reference\n"
     "                        interpreter and compare (exit 1 when off)\n"
     "  --time                print the median time of repeated runs after a warm-up\n"
     "  --random[=SEED]       fill tensors not given as ARG=PATH with seeded random data\n"
     "                        (floats in [-1, 1), small integers, bools; SEED 0 default)\n"
     "  -o, --output DIR      with --random: write the outputs as DIR/ARG.npy\n"
     "  --grid, --block X[,Y,Z]  FILE.cu: the launch's grid and block (CUDA C kernels,\n"
     "                        compiled by NVRTC; KERNEL may be 'NAME<TEMPLATE ARGS>'; a\n"
     "                        pointer parameter takes a 1-D array, and is written back\n"
     "                        unless it points to const; -D defines macros)\n"
     "  --shared BYTES        FILE.cu: dynamic shared memory\n"
     "FILE.mlir: the function's arguments in order, arg0=PATH.npy, arg1=... (scalars:\n"
     "argI=NUMBER); --random fills those not given; its results go to DIR/result0.npy,\n"
     "DIR/result1.npy, ... with -o DIR (else their types are printed); --check compares\n"
     "with the reference interpreter.\n"
     "Nothing is written when the command fails.\n"},
    {"devices", cmd_devices, 0, "devices", "Lists the devices and whether each can run kernels.\n"},
    {"tune", cmd_tune, OPT_KERNEL | OPT_DEVICE | OPT_DEFINE | OPT_SHAPE | OPT_RANDOM | OPT_ARGS,
     "tune FILE -k KERNEL [--device cpu|cuda] [-D NAME=INT]... [--shape NAME=INT]... [--random[=SEED]]\n"
     "            [ARG=VALUE]...",
     "Times the kernel's tune configurations on the device for these argument shapes\n"
     "and prints each one's time and throughput. Times are stored in the cache per\n"
     "(configuration, device, shapes rounded up to powers of two): a configuration\n"
     "timed before is not timed again, and 'tilejit run' uses the fastest. On the cpu\n"
     "nothing is timed: the first valid configuration is used.\n"
     "Options:\n"
     "  -k, --kernel NAME     the kernel to tune\n"
     "  --device DEVICE       cuda (the default when a GPU is present) or cpu\n"
     "  -D NAME=INT[,...]     hold tile parameters fixed\n"
     "  --shape NAME=INT[,...] sizes of dim names for tensors made by --random\n"
     "  --random[=SEED]       random data for tensors not given as ARG=PATH.npy\n"},
    {"cache", cmd_cache, OPT_FILES, "cache stats|list|clear",
     "The cache of compiled kernels and tuning times in $TILEJIT_CACHE_DIR (default\n"
     "~/.cache/tilejit; TILEJIT_CACHE=off: none), at most $TILEJIT_CACHE_MAX bytes\n"
     "(suffixes K, M, G; default 1G), least recently used entries evicted first.\n"
     "  stats   directory, entries and size\n"
     "  list    every entry, least recently used first\n"
     "  clear   remove every entry\n"},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static void print_usage(FILE *f)
{
    fputs("usage: tilejit COMMAND [OPTIONS]\n\ncommands:\n", f);
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  tilejit %s\n", commands[i].synopsis);
    fputs("\n'tilejit COMMAND --help' describes a command; 'tilejit --version' prints the version.\n", f);
}

static void print_command_help(const cli_command *cmd)
{
    printf("usage: tilejit %s\n\n%s", cmd->synopsis, cmd->help);
}

typedef struct command_job {
    tj_ctx *c;
    const cli_command *cmd;
    const cli_opts *o;
    int rc;
} command_job;

static int run_command(void *arg)
{
    command_job *j = arg;
    j->rc = j->cmd->run(j->c, j->o);
    return 0;
}

/* Runs the command with an out-of-memory guard: an allocation failure in
 * the CLI's own code unwinds here instead of aborting. */
static int run_guarded(tj_ctx *c, const cli_command *cmd, const cli_opts *o)
{
    command_job j = {c, cmd, o, CLI_ERROR};
    return tj_guarded(c, run_command, &j) ? CLI_ERROR : j.rc;
}

static int dispatch(tj_ctx *c, int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        const cli_command *cmd = argc > 2 ? find_command(argv[2]) : NULL;
        if (cmd)
            print_command_help(cmd);
        else
            print_usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("tilejit %s\n", TILEJIT_VERSION);
        return CLI_OK;
    }
    const cli_command *cmd = find_command(name);
    if (!cmd)
        return cli_usage_error(NULL, "unknown command '%s'", name);
    cli_opts o;
    int rc = cli_parse_options(c, cmd, argc - 2, argv + 2, &o);
    if (rc != CLI_OK)
        return rc;
    if (o.help) {
        print_command_help(cmd);
        return CLI_OK;
    }
    rc = run_guarded(c, cmd, &o);
    return rc != CLI_OK ? rc : tj_error_count(c) ? CLI_ERROR : CLI_OK;
}

int main(int argc, char **argv)
{
    tj_ctx *c = tj_ctx_new();
    if (!c) {
        fputs("tilejit: out of memory\n", stderr);
        return CLI_ERROR;
    }
    int rc = dispatch(c, argc, argv);
    fflush(stdout);
    fputs(tj_diag_render(c), stderr);
    tj_ctx_free(c);
    return rc;
}
