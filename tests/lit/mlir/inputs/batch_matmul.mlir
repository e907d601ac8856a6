// Made by: mlir-opt-22 -linalg-generalize-named-ops src/batch_matmul.mlir (tests/lit/mlir/inputs/gen.sh); do not edit
#map = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> ()>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map6 = affine_map<(d0, d1) -> ()>
#map7 = affine_map<(d0, d1) -> (d0, d1)>
#map8 = affine_map<(d0, d1, d2) -> (d1, d2)>
module {
  func.func @scores(%arg0: tensor<4x16x32xf32>, %arg1: tensor<4x24x32xf32>) -> (tensor<4x16x24xf32>, tensor<16x24xf32>) {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 1.250000e-01 : f32
    %0 = tensor.empty() : tensor<4x32x24xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<4x24x32xf32>) outs(%0 : tensor<4x32x24xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x32x24xf32>
    %2 = tensor.empty() : tensor<4x16x24xf32>
    %3 = linalg.generic {indexing_maps = [#map2, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst : f32) outs(%2 : tensor<4x16x24xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x16x24xf32>
    %4 = linalg.generic {indexing_maps = [#map3, #map4, #map5], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %1 : tensor<4x16x32xf32>, tensor<4x32x24xf32>) outs(%3 : tensor<4x16x24xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %9 = arith.mulf %in, %in_1 : f32
      %10 = arith.addf %out, %9 : f32
      linalg.yield %10 : f32
    } -> tensor<4x16x24xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<4x16x24xf32>) outs(%2 : tensor<4x16x24xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = arith.mulf %in, %cst_0 : f32
      linalg.yield %9 : f32
    } -> tensor<4x16x24xf32>
    %6 = tensor.empty() : tensor<16x24xf32>
    %7 = linalg.generic {indexing_maps = [#map6, #map7], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%6 : tensor<16x24xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x24xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map8], iterator_types = ["reduction", "parallel", "parallel"]} ins(%5 : tensor<4x16x24xf32>) outs(%7 : tensor<16x24xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = arith.addf %out, %in : f32
      linalg.yield %9 : f32
    } -> tensor<16x24xf32>
    return %5, %8 : tensor<4x16x24xf32>, tensor<16x24xf32>
  }
}

