#!/bin/sh
# Regenerates the MLIR test inputs, inputs/NAME.mlir, from inputs/src/NAME.mlir
# through the mlir-opt-22 pipeline named on the source's first line
# (`// PIPELINE: -pass ...`): what real MLIR pipelines print, not hand-written
# linalg. Each output starts with the command that made it.
#   sh tests/lit/mlir/inputs/gen.sh
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
opt=${MLIR_OPT:-mlir-opt-22}
for src in "$dir"/src/*.mlir; do
    name=$(basename "$src")
    pipeline=$(sed -n '1s|^// PIPELINE: ||p' "$src")
    {
        echo "// Made by: $opt $pipeline src/$name (tests/lit/mlir/inputs/gen.sh); do not edit"
        # shellcheck disable=SC2086
        "$opt" $pipeline "$src"
    } >"$dir/$name.tmp"
    mv "$dir/$name.tmp" "$dir/$name"
done
