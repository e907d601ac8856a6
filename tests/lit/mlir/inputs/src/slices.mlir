// PIPELINE: -canonicalize
// tensor ops: a strided extract_slice, a rank-reducing one of a dense
// constant, a broadcasting map (0 in an indexing map), expand_shape and
// collapse_shape beside a transposing linalg.generic; insert_slice.
func.func @slices(%x: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %s = tensor.extract_slice %x[1, 0] [4, 8] [2, 2] : tensor<8x16xf32> to tensor<4x8xf32>
  %c = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]> : tensor<1x8xf32>
  %row = tensor.extract_slice %c[0, 0] [1, 8] [1, 1] : tensor<1x8xf32> to tensor<8xf32>
  %rb = tensor.expand_shape %row [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (0, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%s, %rb : tensor<4x8xf32>, tensor<1x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %t = arith.addf %a, %b : f32
      linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  %back = tensor.expand_shape %flat [[0, 1]] output_shape [16, 8] : tensor<128xf32> into tensor<16x8xf32>
  %et = tensor.empty() : tensor<16x8xf32>
  %tr = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%et : tensor<16x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
  } -> tensor<16x8xf32>
  %out = arith.addf %back, %tr : tensor<16x8xf32>
  return %sum, %out : tensor<4x8xf32>, tensor<16x8xf32>
}

// insert_slice: y into the middle of x, and a rank-reduced source into a row.
func.func @insert(%x: tensor<8x16xf32>, %y: tensor<4x6xf32>, %r: tensor<16xf32>) -> tensor<8x16xf32> {
  %a = tensor.insert_slice %y into %x[2, 5] [4, 6] [1, 1] : tensor<4x6xf32> into tensor<8x16xf32>
  %b = tensor.insert_slice %r into %a[7, 0] [1, 16] [1, 1] : tensor<16xf32> into tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}
