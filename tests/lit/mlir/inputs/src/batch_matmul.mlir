// PIPELINE: -linalg-generalize-named-ops
// Attention scores: a batch matmul of Q and K transposed (linalg.transpose),
// scaled, and a column sum over the batch (a reduction over the outer loop).
func.func @scores(%q: tensor<4x16x32xf32>, %k: tensor<4x24x32xf32>) -> (tensor<4x16x24xf32>, tensor<16x24xf32>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %et = tensor.empty() : tensor<4x32x24xf32>
  %kt = linalg.transpose ins(%k : tensor<4x24x32xf32>) outs(%et : tensor<4x32x24xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<4x16x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<4x16x32xf32>, tensor<4x32x24xf32>) outs(%acc : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %sc = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<4x16x24xf32>) outs(%e : tensor<4x16x24xf32>) {
    ^bb0(%v: f32, %o: f32):
      %m = arith.mulf %v, %scale : f32
      linalg.yield %m : f32
  } -> tensor<4x16x24xf32>
  %e2 = tensor.empty() : tensor<16x24xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x24xf32>) -> tensor<16x24xf32>
  %cs = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (i, j)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%sc : tensor<4x16x24xf32>) outs(%z2 : tensor<16x24xf32>) {
    ^bb0(%v: f32, %sum: f32):
      %a = arith.addf %sum, %v : f32
      linalg.yield %a : f32
  } -> tensor<16x24xf32>
  return %sc, %cs : tensor<4x16x24xf32>, tensor<16x24xf32>
}
