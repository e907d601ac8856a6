#!/usr/bin/env bash
# scripts/snapshot.sh OUTDIR [BUILD]: writes what the compiler makes of every
# example (examples/examples.txt: Tile IR after the passes, SIMT IR, PTX for
# sm_90a and sm_80, MSL; each also --contiguous) and the output of every lit
# test's RUN line before its FileCheck, one file each, so that a refactor that
# must not change behaviour can be checked with `diff -r BEFORE AFTER`.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/snapshot.sh OUTDIR [BUILD]}
build=$(cd "${2:-$root/build}" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PATH="$build:$PATH" TJ_SOURCE_DIR="$root"

n=0
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    n=$((n + 1))
    # emit takes -D and --shape, not scalar arguments (NAME=VALUE)
    # shellcheck disable=SC2086
    opts=$(printf '%s\n' $args | awk 'keep { printf "%s %s ", flag, $0; keep = 0; next }
                                      $0 == "-D" || $0 == "--shape" { flag = $0; keep = 1 }')
    for target in ir-opt simt ptx ptx:sm_80 msl; do
        for layout in "" --contiguous; do
            name="ex$n-$kernel-${target/:/_}${layout:+-contig}"
            # shellcheck disable=SC2086
            (cd "$root/examples" && tilejit emit "$file" -k "$kernel" --target "$target" $opts $layout) \
                >"$out/$name" 2>&1
            echo "exit $?" >>"$out/$name"
        done
    done
done <"$root/examples/examples.txt"

while IFS= read -r test; do
    rel=${test#"$root"/tests/lit/}
    i=0
    while IFS= read -r cmd; do
        i=$((i + 1))
        cmd=${cmd//%s/$test}
        cmd=${cmd%%| FileCheck*}
        cmd=${cmd%%|FileCheck*}
        name="lit-${rel//\//_}-$i"
        (cd "$root" && bash -c "$cmd") >"$out/$name" 2>&1
        echo "exit $?" >>"$out/$name"
    done < <(grep 'RUN:' "$test" | sed 's/^.*RUN:[[:space:]]*//')
done < <(find "$root/tests/lit" -name '*.tj' -o -name '*.tjir' | sort)
# paths as ROOT, so that two checkouts compare
find "$out" -type f -exec sed -i "s#$root#ROOT#g" {} +
echo "snapshot: $(ls "$out" | wc -l) files in $out"
