/* Replacing files all or nothing (cli.h, docs/limits.md): every output is
 * checked first (regular or new, writable, no two naming one file; a
 * symbolic link is written through), written to a temporary file beside
 * the file it replaces, and renamed over it only when all were written. A
 * rename that still fails puts back the files already replaced, from hard
 * links kept to their old contents. Temporary files are named
 * FILE.tilejit-tmp.PID.N; those a killed run left (over a minute old, their
 * process gone) are removed when a later run writes into that directory. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define TMP_MARK ".tilejit-tmp."
enum { STALE_TMP_SECONDS = 60 };

/* ---- checking an output ------------------------------------------------------------ */

/* Where a symbolic link leads (arena memory), or NULL after reporting. */
static const char *link_target(tj_ctx *c, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real) {
        cli_file_error(c, path, "cannot write through the symbolic link: %s", strerror(errno));
        return NULL;
    }
    const char *target = tj_strdup(c, real);
    free(real);
    return target;
}

/* The file is there and may not be replaced: not a regular file, or
 * read-only (by its mode: root may write anything, but a 0444 file says
 * "keep"). Reports and returns 1. */
static int refuse_existing(tj_ctx *c, const char *path, const struct stat *st, const char *target)
{
    if (S_ISDIR(st->st_mode))
        cli_file_error(c, path, "cannot write: it is a directory; nothing was written");
    else if (!S_ISREG(st->st_mode))
        cli_file_error(c, path, "cannot write: not a regular file; nothing was written");
    else if (!(st->st_mode & 0222) || access(target, W_OK) != 0)
        cli_file_error(c, path, "cannot write: the file is read-only (mode %04o); nothing was written",
                       (unsigned)(st->st_mode & 07777));
    else
        return 0;
    return 1;
}

/* DIR of PATH, "." for a bare name (arena memory). */
static const char *dir_of(tj_ctx *c, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return ".";
    return slash == path ? "/" : tj_strndup(c, path, (size_t)(slash - path));
}

/* A new file is known by its directory and its name, so that two paths
 * spelled differently (./x and x, a/../x) are seen as one file. */
static int identify_new(tj_ctx *c, cli_tmpfile *t)
{
    struct stat st;
    const char *slash = strrchr(t->path, '/');
    t->base = slash ? slash + 1 : t->path;
    if (stat(dir_of(c, t->path), &st) == 0) {
        t->dev = st.st_dev;
        t->ino = st.st_ino;
    }
    return 0;
}

int cli_tmp_prepare(tj_ctx *c, const char *path, cli_tmpfile *t)
{
    struct stat st;
    memset(t, 0, sizeof *t);
    t->path = t->target = path;
    t->mode = -1;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return identify_new(c, t); /* a new file */
        cli_file_error(c, path, "cannot write: %s", strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode) && (!(t->target = link_target(c, path)) || stat(t->target, &st) != 0)) {
        if (t->target)
            cli_file_error(c, path, "cannot write through the symbolic link: %s", strerror(errno));
        return -1;
    }
    if (refuse_existing(c, path, &st, t->target))
        return -1;
    t->exists = 1;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    t->mode = (int)(st.st_mode & 07777);
    return 0;
}

int cli_tmp_same_file(const cli_tmpfile *a, const cli_tmpfile *b)
{
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    if (a->ino && b->ino) /* new files: one directory, one name */
        return a->dev == b->dev && a->ino == b->ino && !strcmp(a->base, b->base);
    return !strcmp(a->target, b->target);
}

/* ---- temporary files ----------------------------------------------------------------- */


/* PATH (named NAME.tilejit-tmp.PID.N) was left by a process that is gone,
 * over a minute ago. */
static int stale_tmp(const char *name, const char *path, time_t now)
{
    const char *mark = strstr(name, TMP_MARK);
    char *end = NULL;
    struct stat st;
    long pid = mark ? strtol(mark + strlen(TMP_MARK), &end, 10) : 0;
    if (pid <= 0 || *end != '.' || lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        now - st.st_mtime < STALE_TMP_SECONDS)
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Removes the stale temporary files of DIR (best effort). */
static void remove_stale_tmps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    char path[4096];
    for (struct dirent *de; (de = readdir(d));)
        if (strstr(de->d_name, TMP_MARK) && snprintf(path, sizeof path, "%s/%s", dir, de->d_name) < (int)sizeof path &&
            stale_tmp(de->d_name, path, now))
            unlink(path);
    closedir(d);
}

/* Makes what NAME names beside TARGET: a new file (its descriptor) or a
 * hard link to TARGET (0); -1 with errno EEXIST when NAME is taken. */
typedef int (*make_fn)(const char *name, const char *target);

/* With the permissions the umask gives (mkstemp would make it 0600). */
static int make_file(const char *name, const char *target)
{
    (void)target;
    return open(name, O_WRONLY | O_CREAT | O_EXCL, 0666);
}

static int make_link(const char *name, const char *target) { return link(target, name); }

/* Room for any name make_beside gives (arena memory). */
static char *name_room(tj_ctx *c, const char *target, size_t *cap)
{
    *cap = strlen(target) + sizeof TMP_MARK + 32;
    return tj_alloc(c, *cap);
}

/* TARGET.tilejit-tmp.PID.TAGN for the first N free (the pid right after the
 * mark, as stale_tmp reads it): what make returned, the name in buf. */
static int make_beside(const char *target, const char *tag, make_fn make, char *buf, size_t cap)
{
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        snprintf(buf, cap, "%s%s%ld.%s%u", target, TMP_MARK, (long)getpid(), tag, attempt);
        int rc = make(buf, target);
        if (rc >= 0 || errno != EEXIST)
            return rc;
    }
    return -1; /* errno is EEXIST */
}

int cli_tmp_open(tj_ctx *c, cli_tmpfile *t)
{
    size_t cap;
    t->tmp = name_room(c, t->target, &cap);
    remove_stale_tmps(dir_of(c, t->target));
    int fd = make_beside(t->target, "", make_file, t->tmp, cap);
    if (fd >= 0 && (t->f = fdopen(fd, "wb")) != NULL)
        return 0;
    int err = errno;
    if (fd >= 0) {
        close(fd);
        unlink(t->tmp);
    }
    cli_file_error(c, t->path, "cannot write: %s", strerror(err));
    t->tmp = NULL;
    return -1;
}

int cli_tmp_close(tj_ctx *c, cli_tmpfile *t)
{
    if (!t->f)
        return 0;
    int fd = fileno(t->f);
    int bad = fflush(t->f) != 0 || ferror(t->f) || fsync(fd) != 0 ||
              (t->mode >= 0 && fchmod(fd, (mode_t)t->mode) != 0);
    int err = bad ? errno : 0;
    if (fclose(t->f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    t->f = NULL;
    if (bad) {
        cli_file_error(c, t->path, "cannot write: %s", strerror(err));
        cli_tmp_discard(t);
        return -1;
    }
    return 0;
}

void cli_tmp_discard(cli_tmpfile *t)
{
    if (t->f)
        fclose(t->f);
    t->f = NULL;
    if (t->tmp)
        unlink(t->tmp);
    t->tmp = NULL;
}

/* ---- committing ---------------------------------------------------------------------------- */

/* A hard link to the target's old contents, so a later failure can put it
 * back. Without hard links (some file systems) there is no undo for this
 * one; the rename itself is still atomic. */
static void keep_backup(tj_ctx *c, cli_tmpfile *t)
{
    if (!t->exists)
        return;
    size_t cap;
    t->backup = name_room(c, t->target, &cap);
    if (make_beside(t->target, "bak", make_link, t->backup, cap) != 0)
        t->backup = NULL;
}

/* Puts back what commit_all replaced of t: the old file, or no file. 0 when
 * it did; otherwise reports where the old contents are (the backup is kept)
 * or that there was no copy to put back. */
static int undo(tj_ctx *c, cli_tmpfile *t)
{
    if (t->backup ? rename(t->backup, t->target) == 0 : !t->exists && unlink(t->target) == 0) {
        t->backup = NULL;
        return 0;
    }
    if (t->backup)
        cli_file_error(c, t->path, "was replaced and could not be put back (%s); its old contents are in %s",
                       strerror(errno), t->backup);
    else if (t->exists)
        cli_file_error(c, t->path, "was replaced and could not be put back: no copy of its old contents "
                       "(hard links are not supported there)");
    else
        cli_file_error(c, t->path, "was written and could not be removed again: %s", strerror(errno));
    return -1;
}

/* Makes the renames into DIR durable (best effort: some file systems
 * cannot sync a directory, and the files themselves were synced). */
static void sync_dir(tj_ctx *c, const char *target)
{
    int fd = open(dir_of(c, target), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int cli_tmp_commit_all(tj_ctx *c, cli_tmpfile *t, uint32_t n)
{
    uint32_t done = 0;
    for (uint32_t i = 0; i < n; i++)
        if (t[i].tmp)
            keep_backup(c, &t[i]);
    for (; done < n; done++)
        if (t[done].tmp && rename(t[done].tmp, t[done].target) != 0)
            break;
    int failed = done < n;
    if (failed) {
        int err = errno, undone = 1;
        for (uint32_t i = 0; i < done; i++)
            if (t[i].tmp && undo(c, &t[i]) != 0) {
                undone = 0;
                t[i].backup = NULL; /* kept: the only copy of the old contents */
            }
        cli_file_error(c, t[done].path, "cannot replace: %s; %s", strerror(err),
                       undone ? "no output was changed" : "some outputs were changed (above)");
    }
    for (uint32_t i = 0; i < n && !failed; i++)
        if (t[i].tmp)
            sync_dir(c, t[i].target);
    for (uint32_t i = 0; i < n; i++) {
        if (t[i].backup)
            unlink(t[i].backup);
        t[i].backup = NULL;
        if (i >= done)
            cli_tmp_discard(&t[i]);
        t[i].tmp = NULL;
    }
    return failed ? -1 : 0;
}
