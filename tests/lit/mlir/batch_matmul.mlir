// A batch matmul of Q and a transposed K, scaled, and a sum over the batch
// loop (a reduction over the outer loop, the output map (b, i, j) -> (i, j)),
// generalized (inputs/batch_matmul.mlir): the batch contraction is one
// matmul over the batch axis, the transpose a view.
// RUN: tilejit emit $(dirname %s)/inputs/batch_matmul.mlir -k scores --target graph | FileCheck %s
// CHECK-DAG: %[[Q:[0-9]+]] = input f32[4, 16, 32]
// CHECK-DAG: %[[K:[0-9]+]] = input f32[4, 24, 32]
// CHECK-DAG: %[[T:[0-9]+]] = transpose f32[4, 32, 24] %[[K]] perm=[0, 2, 1]
// CHECK-DAG: %[[M:[0-9]+]] = matmul f32[4, 16, 24] %[[Q]], %[[T]]
// CHECK-DAG: %[[S:[0-9]+]] = multiply f32[4, 16, 24] %[[M]],
// CHECK-DAG: %[[C:[0-9]+]] = sum f32[1, 16, 24] %[[S]] axes=[0]
// CHECK-DAG: %[[R:[0-9]+]] = reshape f32[16, 24] %[[C]]
// CHECK: return %[[S]], %[[R]]
// RUN: tilejit run $(dirname %s)/inputs/batch_matmul.mlir -k scores --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
