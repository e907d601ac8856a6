# tilejit cache stats|list|clear at the cache's edges (docs/limits.md, "The
# cache"): queries leave a missing directory missing; a FIFO or a directory
# at an entry's path never hangs a command and `clear` removes it; temporary
# files of other processes survive a `clear`.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
unset TILEJIT_CACHE TILEJIT_CACHE_MAX
# cache CMD...: tilejit cache CMD, stopped if it hangs
cache() { expect 0 timeout 60 "$T" cache "$@"; }

# ---- queries do not create the directory -----------------------------------------------
export TILEJIT_CACHE_DIR="$WORK/missing/cache"
cache stats
has out "directory: $WORK/missing/cache/v1 (not created yet)"
has out "entries: 0"
empty err
cache list
cache clear
has out "removed 0 entries"
[ -e "$WORK/missing" ] && fail "a query created $WORK/missing"

# ---- what is not a regular file at an entry's path ---------------------------------------
export TILEJIT_CACHE_DIR="$WORK/cache"
mkdir -p cache/v1
hex=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
mkfifo "cache/v1/$hex.tjc"
mkdir "cache/v1/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210.tjc"
cache stats
cache list
has out "invalid"
cache clear
has out "removed 2 entries"
[ -e "cache/v1/$hex.tjc" ] && fail "clear left the FIFO"
ls cache/v1 | grep -q fedcba && fail "clear left the empty directory"

# ---- temporary files: another process's stays, a killed one's goes ------------------------
live=$$ # this shell
dead=$(sh -c 'echo $$')
echo partial >"cache/v1/$hex.tjc.tmp.$live.0"
echo partial >"cache/v1/$hex.tjc.tmp.$dead.0"
"$PYTHON" -c "import os, time; t = time.time() - 120; [os.utime('cache/v1/$hex.tjc.tmp.%s.0' % p, (t, t)) for p in ('$live', '$dead')]"
cache clear
[ -e "cache/v1/$hex.tjc.tmp.$live.0" ] || fail "clear removed a live writer's temporary file"
[ -e "cache/v1/$hex.tjc.tmp.$dead.0" ] && fail "clear left a killed writer's temporary file"

finish
