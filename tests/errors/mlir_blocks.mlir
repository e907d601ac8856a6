// A function of several blocks and an op of several regions: only
// straight-line code of one block is imported, so neither is skipped.
func.func @f(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = math.exp %a : tensor<4xf32>
  return %0 : tensor<4xf32>
^bb2:
  return %a : tensor<4xf32>
}
func.func @g(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %0 = scf.if %c -> tensor<4xf32> {
    scf.yield %a : tensor<4xf32>
  } else {
    %e = math.exp %a : tensor<4xf32>
    scf.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
