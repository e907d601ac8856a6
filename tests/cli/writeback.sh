# tilejit run's write-back rules (docs/limits.md, "Files and the command
# line"): outputs are replaced all or nothing; two outputs naming one file,
# a read-only output or a directory in an output's place is an error before
# anything is written; a symbolic link is written through; temporary files
# a killed run left are removed by a later run.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT

cat >two.tj <<'TJ'
kernel two(X: f32[N], A: f32[N], B: f32[N])
    grid (cdiv(N, 64))
{
    i = program_id(0) * 64
    v = load(X[i:i+64])
    store(A[i:i+64], v)
    store(B[i:i+64], v * 2.0)
}
TJ
two() { expect "$1" "$T" run two.tj -k two --device cpu X=x.npy "A=$2" "B=$3"; }
values() { npy read "$1" | tail -n +2 | tr '\n' ' '; }
no_temps() {
    if ls ./*tilejit-tmp* od/*tilejit-tmp* >/dev/null 2>&1; then
        fail "temporary files left: $(ls ./*tilejit-tmp* od/*tilejit-tmp* 2>/dev/null)"
    fi
}

npy write x.npy '<f4' 3 1 2 3
npy write a.npy '<f4' 3 0
npy write s.npy '<f4' 3 0
cp s.npy s.orig
cp a.npy a.orig

# ---- two outputs naming one file: an error, nothing written ---------------------------
two 1 s.npy s.npy
has err "s.npy: error: argument 'A' and argument 'B' are both outputs and name this one file; nothing was written"
same s.npy s.orig
ln -s s.npy alias.npy
two 1 s.npy alias.npy
has err "name this one file"
same s.npy s.orig
two 1 s.npy ./s.npy
has err "name this one file"

# ---- all or nothing ------------------------------------------------------------------
# B's path is a directory: nothing is written, A not either (it used to be)
mkdir -p od/B.npy/x
expect 1 "$T" run two.tj -k two --device cpu --random --shape N=32 -o od
has err "od/B.npy: error: cannot write: it is a directory; nothing was written"
[ -e od/A.npy ] && fail "od/A.npy was written by a failed command"
no_temps

# a read-only output is refused (even for root), and the other is not written
cp s.orig ro.npy
chmod 0444 ro.npy
two 1 a.npy ro.npy
has err "ro.npy: error: cannot write: the file is read-only (mode 0444); nothing was written"
same a.npy a.orig
same ro.npy s.orig
[ "$(stat -c %a ro.npy)" = 444 ] || fail "ro.npy lost its mode"
no_temps

# ---- symbolic links are written through -----------------------------------------------
mkdir -p real
cp s.orig real/target.npy
ln -s real/target.npy link.npy
two 0 a.npy link.npy
[ -L link.npy ] || fail "link.npy is no longer a symbolic link"
[ "$(values real/target.npy)" = "2.0 4.0 6.0 " ] || fail "the link's target holds $(values real/target.npy)"
[ "$(values a.npy)" = "1.0 2.0 3.0 " ] || fail "a.npy holds $(values a.npy)"
ln -s nowhere.npy dangling.npy
two 1 a.npy dangling.npy
has err "dangling.npy: error: argument 'B': cannot open"
no_temps

# ---- temporary files of killed runs ---------------------------------------------------
# Made stale by hand: over a minute old and their process gone (a child that
# has exited), or still fresh, or of a live process (this shell).
dead=$(sh -c 'echo $$')
cp a.orig a.npy
for name in "a.npy.tilejit-tmp.$dead.0" "a.npy.tilejit-tmp.$dead.1" "a.npy.tilejit-tmp.$$.0"; do
    echo partial >"$name"
done
"$PYTHON" -c "import os, time; t = time.time() - 120; [os.utime(n, (t, t)) for n in ('a.npy.tilejit-tmp.$dead.0', 'a.npy.tilejit-tmp.$$.0')]"
two 0 a.npy s.npy
[ -e "a.npy.tilejit-tmp.$dead.0" ] && fail "a stale temporary file stayed"
[ -e "a.npy.tilejit-tmp.$dead.1" ] || fail "a fresh temporary file was removed (its writer may be on another machine)"
[ -e "a.npy.tilejit-tmp.$$.0" ] || fail "a live process's temporary file was removed"
rm -f ./*tilejit-tmp*

finish
