// Made by: mlir-opt-22 -canonicalize src/slices.mlir (tests/lit/mlir/inputs/gen.sh); do not edit
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
#map2 = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @slices(%arg0: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
    %cst = arith.constant dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]]> : tensor<1x8xf32>
    %extracted_slice = tensor.extract_slice %arg0[1, 0] [4, 8] [2, 2] : tensor<8x16xf32> to tensor<4x8xf32>
    %extracted_slice_0 = tensor.extract_slice %cst[0, 0] [1, 8] [1, 1] : tensor<1x8xf32> to tensor<8xf32>
    %expanded = tensor.expand_shape %extracted_slice_0 [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
    %0 = tensor.empty() : tensor<4x8xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%extracted_slice, %expanded : tensor<4x8xf32>, tensor<1x8xf32>) outs(%0 : tensor<4x8xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %5 = arith.addf %in, %in_2 : f32
      linalg.yield %5 : f32
    } -> tensor<4x8xf32>
    %collapsed = tensor.collapse_shape %arg0 [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
    %expanded_1 = tensor.expand_shape %collapsed [[0, 1]] output_shape [16, 8] : tensor<128xf32> into tensor<16x8xf32>
    %2 = tensor.empty() : tensor<16x8xf32>
    %3 = linalg.generic {indexing_maps = [#map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<8x16xf32>) outs(%2 : tensor<16x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x8xf32>
    %4 = arith.addf %expanded_1, %3 : tensor<16x8xf32>
    return %1, %4 : tensor<4x8xf32>, tensor<16x8xf32>
  }
  func.func @insert(%arg0: tensor<8x16xf32>, %arg1: tensor<4x6xf32>, %arg2: tensor<16xf32>) -> tensor<8x16xf32> {
    %inserted_slice = tensor.insert_slice %arg1 into %arg0[2, 5] [4, 6] [1, 1] : tensor<4x6xf32> into tensor<8x16xf32>
    %inserted_slice_0 = tensor.insert_slice %arg2 into %inserted_slice[7, 0] [1, 16] [1, 1] : tensor<16xf32> into tensor<8x16xf32>
    return %inserted_slice_0 : tensor<8x16xf32>
  }
}

