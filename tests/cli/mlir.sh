#!/bin/sh
# FILE.mlir on the command line: `run` binds arg0=, arg1= (.npy files or a
# number for a scalar) in order and writes DIR/result0.npy ... (checked
# against values computed here), --random and --check, `emit` targets,
# `check` silent when clean and FILE:LINE:COL errors when not, and the
# usage errors. Skips (77) where tilejit was built without MLIR 22.
. "$(dirname "$0")/testlib.inc"
cat >probe.mlir <<'MLIR'
func.func @probe(%a: tensor<1xf32>) -> tensor<1xf32> { return %a : tensor<1xf32> }
MLIR
if ! "$TILEJIT" check probe.mlir 2>err; then
    grep -q "no MLIR" err && { echo "SKIP: $(head -1 err)"; exit 77; }
    fail "check probe.mlir: $(cat err)"
fi
cat >axpy.mlir <<'MLIR'
// y = a x + y, and the sum of the result
func.func @axpy(%a: f32, %x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> ()>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %x, %y : f32, tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
    ^bb0(%s: f32, %u: f32, %v: f32, %o: f32):
      %m = arith.mulf %s, %u : f32
      %t = arith.addf %m, %v : f32
      linalg.yield %t : f32
  } -> tensor<2x3xf32>
  %z = arith.constant dense<0.0> : tensor<f32>
  %sum = linalg.reduce ins(%r : tensor<2x3xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%p: f32, %acc: f32) {
      %q = arith.addf %p, %acc : f32
      linalg.yield %q : f32
    }
  return %r, %sum : tensor<2x3xf32>, tensor<f32>
}
MLIR
npy write x.npy '<f4' 2,3 1 2 3 4 5 6
npy write y.npy '<f4' 2,3 10 20 30 40 50 60
expect 0 "$TILEJIT" check axpy.mlir
empty err
expect 0 "$TILEJIT" run axpy.mlir -k axpy --device cpu arg0=2 arg1=x.npy arg2=y.npy -o res
npy read res/result0.npy >r0
printf '<f4 2,3\n12.0\n24.0\n36.0\n48.0\n60.0\n72.0\n' >want0
same r0 want0
npy read res/result1.npy >r1
printf '<f4 \n252.0\n' >want1
same r1 want1
# the interpreter agrees, and --check compares the cpu with it
expect 0 "$TILEJIT" run axpy.mlir -k axpy --device interp arg0=2 arg1=x.npy arg2=y.npy -o res2
same res/result0.npy res2/result0.npy
expect 0 "$TILEJIT" run axpy.mlir -k axpy --device cpu --random=3 --check
has out "check: result0:"
has out "check: result1:"
has out "result0: f32[2, 3] (-o DIR writes it as DIR/result0.npy)"
expect 0 "$TILEJIT" run axpy.mlir -k axpy --device cpu --random --time
has out "time: "
# emit: the graph, the groups, the kernels
expect 0 "$TILEJIT" emit axpy.mlir -k axpy --target graph
has out "%0 = input f32[]"
has out "sum f32"
expect 0 "$TILEJIT" emit axpy.mlir -k axpy --target emit
has out "kernel "
expect 2 "$TILEJIT" emit axpy.mlir -k axpy --target ptx
has err "an MLIR file (.mlir) has the targets graph, fuse, tile and emit"
# arguments: unknown names, missing ones, wrong shapes and dtypes
expect 1 "$TILEJIT" run axpy.mlir -k axpy --device cpu x=x.npy
has err "no parameter 'x': the function takes arg0 ... arg2"
expect 1 "$TILEJIT" run axpy.mlir -k axpy --device cpu arg0=2 arg1=x.npy
has err "missing argument arg2 (f32 of rank 2); give arg2=PATH.npy or --random"
npy write bad.npy '<f4' 3,2 1 2 3 4 5 6
expect 1 "$TILEJIT" run axpy.mlir -k axpy --device cpu arg0=2 arg1=bad.npy arg2=y.npy
has err "argument 'arg1' (parameter 1) must be f32[2, 3], the function's type"
expect 1 "$TILEJIT" run axpy.mlir -k nope --device cpu --random
has err "no function 'nope' in axpy.mlir"
expect 2 "$TILEJIT" run axpy.mlir --random
has err "missing -k FUNCTION"
expect 2 "$TILEJIT" run axpy.mlir -k axpy --device metal --random
has err "an MLIR function runs on --device cpu, interp or cuda[:N], not 'metal'"
expect 2 "$TILEJIT" run axpy.mlir -k axpy -D BLOCK=4 --random
has err "do not apply to an MLIR file"
# nothing written when the run fails
rm -rf res3
expect 1 "$TILEJIT" run axpy.mlir -k axpy --device cpu arg0=2 arg1=bad.npy arg2=y.npy -o res3
[ ! -e res3 ] || fail "res3 was made by a failed run"
# check: unsupported ops at their locations
cat >bad.mlir <<'MLIR'
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.atan %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
MLIR
expect 1 "$TILEJIT" check bad.mlir
has err "bad.mlir:2:8: error: 'math.atan': op not imported by tilejit"
has err "  %0 = math.atan %a : tensor<4xf32>"
finish
