// Made by: mlir-opt-22 -convert-elementwise-to-linalg -canonicalize src/elementwise.mlir (tests/lit/mlir/inputs/gen.sh); do not edit
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @gelu_tanh(%arg0: tensor<64x256xf32>) -> tensor<64x256xf32> {
    %cst = arith.constant dense<5.000000e-01> : tensor<64x256xf32>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<64x256xf32>
    %cst_1 = arith.constant dense<0.797884583> : tensor<64x256xf32>
    %cst_2 = arith.constant dense<4.471500e-02> : tensor<64x256xf32>
    %0 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg0 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%arg0 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%0, %arg0 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%0 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %cst_2 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%1 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%arg0 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.addf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %cst_1 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%3 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<64x256xf32>) outs(%4 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = math.tanh %in : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %cst_0 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%5 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.addf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %cst : tensor<64x256xf32>, tensor<64x256xf32>) outs(%arg0 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%7, %6 : tensor<64x256xf32>, tensor<64x256xf32>) outs(%7 : tensor<64x256xf32>) {
    ^bb0(%in: f32, %in_3: f32, %out: f32):
      %9 = arith.mulf %in, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<64x256xf32>
    return %8 : tensor<64x256xf32>
  }
  func.func @select_exp(%arg0: tensor<32x32xf32>, %arg1: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xi1>) {
    %0 = tensor.empty() : tensor<32x32xi1>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<32x32xf32>, tensor<32x32xf32>) outs(%0 : tensor<32x32xi1>) {
    ^bb0(%in: f32, %in_0: f32, %out: i1):
      %5 = arith.cmpf ogt, %in, %in_0 : f32
      linalg.yield %5 : i1
    } -> tensor<32x32xi1>
    %2 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %arg0, %arg1 : tensor<32x32xi1>, tensor<32x32xf32>, tensor<32x32xf32>) outs(%arg0 : tensor<32x32xf32>) {
    ^bb0(%in: i1, %in_0: f32, %in_1: f32, %out: f32):
      %5 = arith.select %in, %in_0, %in_1 : f32
      linalg.yield %5 : f32
    } -> tensor<32x32xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<32x32xf32>) outs(%2 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = math.exp %in : f32
      linalg.yield %5 : f32
    } -> tensor<32x32xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %arg1 : tensor<32x32xf32>, tensor<32x32xf32>) outs(%3 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %5 = arith.subf %in, %in_0 : f32
      linalg.yield %5 : f32
    } -> tensor<32x32xf32>
    return %4, %1 : tensor<32x32xf32>, tensor<32x32xi1>
  }
}

