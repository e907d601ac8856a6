// PIPELINE: -linalg-generalize-named-ops
// Row softmax as front ends write it: a max reduction (linalg.reduce), a
// broadcast subtract and exp (linalg.generic), a sum reduction, a divide;
// the named ops become linalg.generic with reduction iterators.
func.func @softmax(%x: tensor<8x100xf32>) -> tensor<8x100xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.reduce ins(%x : tensor<8x100xf32>) outs(%mi : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %e2 = tensor.empty() : tensor<8x100xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<8x100xf32>, tensor<8xf32>) outs(%e2 : tensor<8x100xf32>) {
    ^bb0(%v: f32, %mx: f32, %o: f32):
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      linalg.yield %e : f32
  } -> tensor<8x100xf32>
  %si = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%ex : tensor<8x100xf32>) outs(%si : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<8x100xf32>, tensor<8xf32>) outs(%e2 : tensor<8x100xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %q = arith.divf %v, %s : f32
      linalg.yield %q : f32
  } -> tensor<8x100xf32>
  return %y : tensor<8x100xf32>
}
