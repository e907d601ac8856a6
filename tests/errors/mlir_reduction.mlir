// Imported ops that cannot be imported as written: a reduction whose body
// does not combine its output with the inputs, a diagonal indexing map.
func.func @not_a_combine(%a: tensor<4x4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x4xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = arith.subf %o, %x : f32
      linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @diagonal(%a: tensor<4x4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
