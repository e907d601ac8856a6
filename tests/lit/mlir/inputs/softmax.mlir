// Made by: mlir-opt-22 -linalg-generalize-named-ops src/softmax.mlir (tests/lit/mlir/inputs/gen.sh); do not edit
#map = affine_map<(d0) -> ()>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0)>
module {
  func.func @softmax(%arg0: tensor<8x100xf32>) -> tensor<8x100xf32> {
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<8xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel"]} ins(%cst : f32) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %2 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<8x100xf32>) outs(%1 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.maximumf %in, %out : f32
      linalg.yield %8 : f32
    } -> tensor<8xf32>
    %3 = tensor.empty() : tensor<8x100xf32>
    %4 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<8x100xf32>, tensor<8xf32>) outs(%3 : tensor<8x100xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.subf %in, %in_1 : f32
      %9 = math.exp %8 : f32
      linalg.yield %9 : f32
    } -> tensor<8x100xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel"]} ins(%cst_0 : f32) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    %6 = linalg.generic {indexing_maps = [#map2, #map3], iterator_types = ["parallel", "reduction"]} ins(%4 : tensor<8x100xf32>) outs(%5 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.addf %in, %out : f32
      linalg.yield %8 : f32
    } -> tensor<8xf32>
    %7 = linalg.generic {indexing_maps = [#map2, #map3, #map2], iterator_types = ["parallel", "parallel"]} ins(%4, %6 : tensor<8x100xf32>, tensor<8xf32>) outs(%3 : tensor<8x100xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.divf %in, %in_1 : f32
      linalg.yield %8 : f32
    } -> tensor<8x100xf32>
    return %7 : tensor<8x100xf32>
  }
}

