/* Command-line options shared by the subcommands. Every option has a long
 * form (`--kernel NAME`, `--kernel=NAME`); -k, -D and -o also take their
 * value glued on (`-kadd`, `-DBLOCK=64`). -D and --shape take one binding
 * or a comma-separated list (`--shape M=64,N=1000`). */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tilejit%s%s: error: ", cmd ? " " : "", cmd ? cmd->name : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'tilejit %s%s--help')\n", cmd ? cmd->name : "", cmd ? " " : "");
    return CLI_USAGE;
}

int cli_parse_int(const char *s, int64_t *out)
{
    const char *p = s;
    int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (*p)
        return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int cli_is_identifier(const char *s, size_t len)
{
    if (!len || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < len; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    return 1;
}

/* ---- the option table ------------------------------------------------------------ */

typedef enum { VAL_NONE, VAL_REQUIRED, VAL_OPTIONAL } value_kind;

typedef struct option_spec {
    unsigned bit;
    char short_name;  /* 0: none */
    const char *long_name;
    value_kind value;
} option_spec;

static const option_spec option_table[] = {
    {OPT_KERNEL, 'k', "kernel", VAL_REQUIRED}, {OPT_TARGET, 0, "target", VAL_REQUIRED},
    {OPT_DEFINE, 'D', "define", VAL_REQUIRED}, {OPT_SHAPE, 0, "shape", VAL_REQUIRED},
    {OPT_OUTPUT, 'o', "output", VAL_REQUIRED}, {OPT_DEVICE, 0, "device", VAL_REQUIRED},
    {OPT_CHECK, 0, "check", VAL_NONE},         {OPT_TIME, 0, "time", VAL_NONE},
    {OPT_RANDOM, 0, "random", VAL_OPTIONAL},  {OPT_TUNE, 0, "tune", VAL_NONE},
    {OPT_CONTIGUOUS, 0, "contiguous", VAL_NONE},
    {OPT_LAUNCH, 0, "grid", VAL_REQUIRED},     {OPT_LAUNCH, 0, "block", VAL_REQUIRED},
    {OPT_LAUNCH, 0, "shared", VAL_REQUIRED},
};

static const option_spec *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof option_table / sizeof option_table[0]; i++)
        if (strlen(option_table[i].long_name) == len && !memcmp(option_table[i].long_name, name, len))
            return &option_table[i];
    return NULL;
}

static const option_spec *find_short(char ch)
{
    for (size_t i = 0; i < sizeof option_table / sizeof option_table[0]; i++)
        if (option_table[i].short_name && option_table[i].short_name == ch)
            return &option_table[i];
    return NULL;
}

/* ---- values -------------------------------------------------------------------- */

typedef struct bindings {
    tj_binding *items;
    uint32_t n, cap;
} bindings;


/* NAME=INT[,NAME=INT...] */
static int parse_bindings(tj_ctx *c, const cli_command *cmd, const char *opt, const char *text, int allow_negative,
                          bindings *b)
{
    const char *p = text;
    do {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        int64_t v;
        char *value = eq ? tj_strndup(c, eq + 1, len - (size_t)(eq + 1 - p)) : NULL;
        if (!eq || !cli_is_identifier(p, (size_t)(eq - p)) || cli_parse_int(value, &v))
            return cli_usage_error(cmd, "%s expects NAME=INT, got '%s'", opt, text);
        if (v < 0 && !allow_negative)
            return cli_usage_error(cmd, "%s %.*s: %lld is negative", opt, (int)(eq - p), p, (long long)v);
        const char *name = tj_strndup(c, p, (size_t)(eq - p));
        for (uint32_t i = 0; i < b->n; i++)
            if (!strcmp(b->items[i].name, name))
                return cli_usage_error(cmd, "%s %s given twice", opt, name);
        b->items = tj_grow(c, b->items, &b->cap, b->n + 1, sizeof *b->items);
        b->items[b->n++] = (tj_binding){name, v};
        p = comma ? comma + 1 : NULL;
    } while (p);
    return CLI_OK;
}

typedef struct parse_state {
    tj_ctx *c;
    const cli_command *cmd;
    cli_opts *o;
    bindings defines, shapes;
    cli_kv *args;
    uint32_t nargs, argcap;
    uint32_t filecap;
} parse_state;

static int set_once(parse_state *s, const char **slot, const char *opt, const char *value)
{
    if (*slot)
        return cli_usage_error(s->cmd, "%s given twice", opt);
    if (!*value)
        return cli_usage_error(s->cmd, "%s needs a value", opt);
    *slot = value;
    return CLI_OK;
}

static int apply_option(parse_state *s, const option_spec *spec, const char *opt, const char *value)
{
    cli_opts *o = s->o;
    switch (spec->bit) {
    case OPT_KERNEL: return set_once(s, &o->kernel, opt, value);
    case OPT_TARGET: return set_once(s, &o->target, opt, value);
    case OPT_OUTPUT: return set_once(s, &o->output, opt, value);
    case OPT_DEVICE: return set_once(s, &o->device, opt, value);
    case OPT_DEFINE: return parse_bindings(s->c, s->cmd, "-D", value, 1, &s->defines);
    case OPT_SHAPE: return parse_bindings(s->c, s->cmd, "--shape", value, 0, &s->shapes);
    case OPT_CHECK: o->check = 1; return CLI_OK;
    case OPT_TIME: o->time = 1; return CLI_OK;
    case OPT_TUNE: o->tune = 1; return CLI_OK;
    case OPT_CONTIGUOUS: o->contiguous = 1; return CLI_OK;
    case OPT_LAUNCH: /* one bit, three options: the name picks the field */
        return set_once(s, spec->long_name[0] == 'g' ? &o->grid : spec->long_name[0] == 'b' ? &o->block : &o->shared,
                        opt, value);
    case OPT_RANDOM: {
        int64_t seed = 0;
        if (value && (cli_parse_int(value, &seed) || seed < 0))
            return cli_usage_error(s->cmd, "--random=SEED expects a non-negative integer, got '%s'", value);
        o->random = 1;
        o->seed = (uint64_t)seed;
        return CLI_OK;
    }
    }
    return cli_usage_error(s->cmd, "unhandled option %s", opt); /* not reached */
}

/* One option argument at argv[*i]; may consume the next one as its value. */
static int parse_option(parse_state *s, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *value = NULL;
    const option_spec *spec;
    if (arg[1] == '-') {
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        spec = find_long(arg + 2, len);
        value = eq ? eq + 1 : NULL;
    } else {
        spec = find_short(arg[1]);
        value = arg[2] ? arg + 2 : NULL;
    }
    if (!spec)
        return cli_usage_error(s->cmd, "unknown option '%s'", arg);
    char opt[32];
    if (spec->short_name && arg[1] != '-')
        snprintf(opt, sizeof opt, "-%c", spec->short_name);
    else
        snprintf(opt, sizeof opt, "--%s", spec->long_name);
    if (!(s->cmd->options & spec->bit))
        return cli_usage_error(s->cmd, "option %s does not apply to '%s'", opt, s->cmd->name);
    if (spec->value == VAL_NONE && value)
        return cli_usage_error(s->cmd, "option %s takes no value", opt);
    if (spec->value == VAL_REQUIRED && !value) {
        if (*i + 1 >= argc)
            return cli_usage_error(s->cmd, "option %s needs a value", opt);
        value = argv[++*i];
    }
    return apply_option(s, spec, opt, value);
}

static int add_positional(parse_state *s, const char *arg)
{
    cli_opts *o = s->o;
    if (o->nfiles == 0 || (s->cmd->options & OPT_FILES)) {
        o->files = tj_grow(s->c, o->files, &s->filecap, o->nfiles + 1, sizeof *o->files);
        o->files[o->nfiles++] = arg;
        return CLI_OK;
    }
    const char *eq = strchr(arg, '=');
    if (!(s->cmd->options & OPT_ARGS))
        return cli_usage_error(s->cmd, "unexpected argument '%s' (one FILE only)", arg);
    if (!eq || !cli_is_identifier(arg, (size_t)(eq - arg)))
        return cli_usage_error(s->cmd, "expected ARG=VALUE after FILE, got '%s'", arg);
    const char *name = tj_strndup(s->c, arg, (size_t)(eq - arg));
    for (uint32_t i = 0; i < s->nargs; i++)
        if (!strcmp(s->args[i].name, name))
            return cli_usage_error(s->cmd, "argument '%s' given twice", name);
    s->args = tj_grow(s->c, s->args, &s->argcap, s->nargs + 1, sizeof *s->args);
    s->args[s->nargs++] = (cli_kv){name, eq + 1};
    return CLI_OK;
}

int cli_parse_options(tj_ctx *c, const cli_command *cmd, int argc, char **argv, cli_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    parse_state s = {.c = c, .cmd = cmd, .o = o};
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        int rc;
        if (!only_positional && (!strcmp(arg, "-h") || !strcmp(arg, "--help"))) {
            o->help = 1;
            return CLI_OK;
        }
        if (!only_positional && !strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        if (!only_positional && arg[0] == '-' && arg[1])
            rc = parse_option(&s, argc, argv, &i);
        else
            rc = add_positional(&s, arg);
        if (rc != CLI_OK)
            return rc;
    }
    o->defines = s.defines.items;
    o->ndefines = s.defines.n;
    o->shapes = s.shapes.items;
    o->nshapes = s.shapes.n;
    o->args = s.args;
    o->nargs = s.nargs;
    return CLI_OK;
}
