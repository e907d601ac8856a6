// PIPELINE: -convert-elementwise-to-linalg -canonicalize
// arith and math on tensors, with a broadcast constant: gelu-like tanh
// approximation y = 0.5 x (1 + tanh(0.79788456 (x + 0.044715 x^3))), then
// a select on a comparison and an exp.
func.func @gelu_tanh(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %half = arith.constant dense<0.5> : tensor<64x256xf32>
  %one = arith.constant dense<1.0> : tensor<64x256xf32>
  %k = arith.constant dense<0.79788456> : tensor<64x256xf32>
  %c = arith.constant dense<0.044715> : tensor<64x256xf32>
  %x2 = arith.mulf %x, %x : tensor<64x256xf32>
  %x3 = arith.mulf %x2, %x : tensor<64x256xf32>
  %cx3 = arith.mulf %c, %x3 : tensor<64x256xf32>
  %in = arith.addf %x, %cx3 : tensor<64x256xf32>
  %kin = arith.mulf %k, %in : tensor<64x256xf32>
  %t = math.tanh %kin : tensor<64x256xf32>
  %onet = arith.addf %one, %t : tensor<64x256xf32>
  %hx = arith.mulf %half, %x : tensor<64x256xf32>
  %y = arith.mulf %hx, %onet : tensor<64x256xf32>
  return %y : tensor<64x256xf32>
}

func.func @select_exp(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xi1>) {
  %gt = arith.cmpf ogt, %a, %b : tensor<32x32xf32>
  %m = arith.select %gt, %a, %b : tensor<32x32xi1>, tensor<32x32xf32>
  %e = math.exp %m : tensor<32x32xf32>
  %d = arith.subf %e, %b : tensor<32x32xf32>
  return %d, %gt : tensor<32x32xf32>, tensor<32x32xi1>
}
