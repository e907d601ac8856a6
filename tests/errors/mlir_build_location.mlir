// An error found while building a function is at the op, in the file its
// location names.
func.func @g(%a: tensor<4x4xf32>, %i: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%i : tensor<4xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
  } -> tensor<4xf32> loc("model.py":20:5)
  return %0 : tensor<4xf32>
}
