// MLIR's own errors (here the parser's: a use of an undefined value), at
// their locations.
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
