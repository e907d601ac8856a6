/* Runs ptxas on PTX text, for tests (header only; POSIX: define
 * _POSIX_C_SOURCE 200809L before any include). ptxas is looked up on PATH,
 * then in /usr/local/cuda/bin; tests skip with a visible reason when it is
 * missing. */
#ifndef TJ_PTXAS_UTIL_H
#define TJ_PTXAS_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tilejit/ir.h"

/* The path of ptxas in buf, or NULL. */
static inline const char *pa_find_ptxas(char *buf, size_t cap)
{
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/local/cuda/bin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, cap, "%s/ptxas", d);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

/* Assembles `ptx` for `arch` as relocatable code (-c), as nvJitLink compiles
 * the runtime's PTX: a subroutine the PTX needs (a 64-bit division, an IEEE
 * division's slow path) is then an extern call, which makes ptxas serialize
 * the kernel's wgmma (C7509), where a whole-program compile inlines it.
 * Returns ptxas's exit status (-1 when it could not run) and its messages in
 * *log (free with tj_buf_free). */
static inline int pa_assemble(const char *ptxas, const char *ptx, size_t len, const char *arch, tj_buf *log)
{
    char path[] = "/tmp/tj_ptx_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(path);
        return -1;
    }
    fwrite(ptx, 1, len, f);
    fclose(f);
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "'%s' -c -arch=%s '%s' -o /dev/null 2>&1", ptxas, arch, path);
    FILE *p = popen(cmd, "r");
    int rc = -1;
    if (p) {
        char chunk[512];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
            tj_buf_append(log, chunk, n);
        rc = pclose(p);
        rc = rc == -1 ? -1 : WEXITSTATUS(rc);
    }
    unlink(path);
    return rc;
}

#endif
