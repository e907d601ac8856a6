// Locations that name another file (as traced front ends write them) are
// reported there, unquoted; those of this file are quoted.
#loc1 = loc("model.py":12:3)
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.atan %a : tensor<4xf32> loc(#loc1)
  %1 = math.acos %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
