// Made by: mlir-opt-22 --pass-pipeline=builtin.module(func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,tosa-to-tensor),canonicalize) src/tosa_mlp.mlir (tests/lit/mlir/inputs/gen.sh); do not edit
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
module {
  func.func @tosa_mlp(%arg0: tensor<1x16x64xf32>, %arg1: tensor<1x64x32xf32>, %arg2: tensor<1x1x32xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x1xf32>) {
    %cst = arith.constant 3.40282347E+38 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty() : tensor<1x16x32xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<1x16x64xf32>, tensor<1x64x32xf32>) outs(%1 : tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
    %3 = tensor.empty() : tensor<1x16x32xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%2, %arg2 : tensor<1x16x32xf32>, tensor<1x1x32xf32>) outs(%3 : tensor<1x16x32xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %11 = arith.addf %in, %in_1 : f32
      linalg.yield %11 : f32
    } -> tensor<1x16x32xf32>
    %5 = tensor.empty() : tensor<1x16x32xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<1x16x32xf32>) outs(%5 : tensor<1x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %11 = arith.minimumf %in, %cst : f32
      %12 = arith.maximumf %11, %cst_0 : f32
      linalg.yield %12 : f32
    } -> tensor<1x16x32xf32>
    %7 = tensor.empty() : tensor<1x16x32xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<1x16x32xf32>) outs(%7 : tensor<1x16x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %11 = math.exp %in : f32
      linalg.yield %11 : f32
    } -> tensor<1x16x32xf32>
    %9 = tensor.empty() : tensor<1x16xf32>
    %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<1x16xf32>) -> tensor<1x16xf32>
    %reduced = linalg.reduce ins(%8 : tensor<1x16x32xf32>) outs(%10 : tensor<1x16xf32>) dimensions = [2] 
      (%in: f32, %init: f32) {
        %11 = arith.addf %in, %init : f32
        linalg.yield %11 : f32
      }
    %expanded = tensor.expand_shape %reduced [[0], [1, 2]] output_shape [1, 16, 1] : tensor<1x16xf32> into tensor<1x16x1xf32>
    return %6, %expanded : tensor<1x16x32xf32>, tensor<1x16x1xf32>
  }
}

