// PIPELINE: -linalg-generalize-named-ops
// y = relu(x W + b): fill, matmul, a broadcast bias add and a max with 0,
// all turned into linalg.generic by -linalg-generalize-named-ops.
func.func @mlp(%x: tensor<16x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<16x32xf32>) -> tensor<16x32xf32>
  %bb = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e : tensor<16x32xf32>) dimensions = [0]
  %s = linalg.add ins(%mm, %bb : tensor<16x32xf32>, tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.map ins(%s : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>)
    (%v: f32, %o: f32) {
      %m = arith.maximumf %v, %zero : f32
      linalg.yield %m : f32
    }
  return %r : tensor<16x32xf32>
}
