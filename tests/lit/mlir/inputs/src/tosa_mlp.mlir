// PIPELINE: --pass-pipeline=builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize)
// A TOSA program (as TFLite-style front ends write them) lowered to linalg
// by the tosa-to-* passes: batch_matmul with a zero fill, a broadcast bias
// add (0 in an indexing map), a clamp as relu, exp, a reduce_sum whose
// kept unit axis comes back through expand_shape.
func.func @tosa_mlp(%x: tensor<1x16x64xf32>, %w: tensor<1x64x32xf32>, %b: tensor<1x1x32xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x1xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x16x64xf32>, tensor<1x64x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x16x32xf32>
  %s = tosa.add %mm, %b : (tensor<1x16x32xf32>, tensor<1x1x32xf32>) -> tensor<1x16x32xf32>
  %r = tosa.clamp %s {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  %e = tosa.exp %r : (tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  %sum = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<1x16x32xf32>) -> tensor<1x16x1xf32>
  return %r, %sum : tensor<1x16x32xf32>, tensor<1x16x1xf32>
}
