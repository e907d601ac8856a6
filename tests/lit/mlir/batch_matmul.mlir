// A batch matmul of Q and a transposed K, scaled, and a sum over the batch
// loop (a reduction over the outer loop, the output map (b, i, j) -> (i, j)),
// generalized (inputs/batch_matmul.mlir): the batch contraction is one
// matmul over the batch axis, the transpose a view.
// RUN: tilejit emit $(dirname %s)/inputs/batch_matmul.mlir -k scores --target graph | FileCheck %s
// CHECK: %0 = input f32[4, 16, 32]
// CHECK-NEXT: %1 = input f32[4, 24, 32]
// CHECK: %[[T:[0-9]+]] = transpose f32[4, 32, 24] %1 perm=[0, 2, 1]
// CHECK-NEXT: %[[M:[0-9]+]] = matmul f32[4, 16, 24] %0, %[[T]]
// CHECK-NEXT: %[[S:[0-9]+]] = multiply f32[4, 16, 24] %[[M]],
// CHECK-NEXT: sum f32[1, 16, 24] %[[S]] axes=[0]
// CHECK: return %[[S]],
// RUN: tilejit run $(dirname %s)/inputs/batch_matmul.mlir -k scores --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
