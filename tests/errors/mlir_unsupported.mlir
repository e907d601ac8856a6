// Every op and type tilejit does not import is an error at its location,
// naming it; the others around them are not.
func.func @f(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %0 = math.atan %a : tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %1 = scf.for %i = %c0 to %n step %c1 iter_args(%t = %0) -> tensor<4xf32> {
    %e = math.exp %t : tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  %2 = func.call @g(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "stablehlo.sine"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = arith.remf %3, %3 : tensor<4xf32>
  return %4 : tensor<4xf32>
}
func.func private @g(tensor<4xf32>) -> tensor<4xf32>
func.func @dynamic(%a: tensor<?x4xf32>, %m: memref<4xf32>) -> tensor<?x4xf32> {
  %0 = math.exp %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
func.func @body(%a: tensor<4x4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = math.atan2 %x, %o : f32
      linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
