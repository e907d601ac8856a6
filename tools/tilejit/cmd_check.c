/* `tilejit check FILE...`: front end, lowering and verification of every
 * kernel; silent when clean. */
#include "cli.h"

static int check_file(tj_ctx *c, const char *path)
{
    if (cli_is_cuda_c(path))
        return cli_check_cuda_c(c, path);
    if (cli_is_mlir(path))
        return cli_check_mlir(c, path);
    size_t len;
    char *text = cli_read_file(c, path, &len);
    if (!text)
        return -1;
    const tj_program *p = tj_parse_program(c, cli_source_name(path), text, len);
    return p && tj_check_program(c, p) == 0 ? 0 : -1;
}

int cmd_check(tj_ctx *c, const cli_opts *o)
{
    if (!o->nfiles)
        return cli_usage_error(o->cmd, "no FILE given");
    int failed = 0;
    for (uint32_t i = 0; i < o->nfiles; i++)
        failed |= check_file(c, o->files[i]) != 0;
    return failed ? CLI_ERROR : CLI_OK;
}
