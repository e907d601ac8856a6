// A TOSA program lowered by tosa-to-linalg (inputs/tosa_mlp.mlir): the
// batch_matmul of a zero fill is a bare matmul, the bias (a map with 0 in
// it) a reshape and broadcast, the clamp a minimum and a maximum, the
// reduce_sum with its unit axis put back a sum and a reshape.
// RUN: tilejit emit $(dirname %s)/inputs/tosa_mlp.mlir -k tosa_mlp --target graph | FileCheck %s
// CHECK-DAG: %[[X:[0-9]+]] = input f32[1, 16, 64]
// CHECK-DAG: %[[W:[0-9]+]] = input f32[1, 64, 32]
// CHECK-DAG: %[[B:[0-9]+]] = input f32[1, 1, 32]
// CHECK-DAG: %[[MM:[0-9]+]] = matmul f32[1, 16, 32] %[[X]], %[[W]]
// CHECK-DAG: %[[B2:[0-9]+]] = reshape f32[1, 32] %[[B]]
// CHECK-DAG: %[[S:[0-9]+]] = add f32[1, 16, 32] %[[MM]],
// CHECK-DAG: %[[LO:[0-9]+]] = minimum f32[1, 16, 32] %[[S]],
// CHECK-DAG: %[[R:[0-9]+]] = maximum f32[1, 16, 32] %[[LO]],
// CHECK-DAG: %[[E:[0-9]+]] = exp f32[1, 16, 32] %[[R]]
// CHECK-DAG: sum f32[1, 16, 1] %[[E]] axes=[2]
// CHECK: return %[[R]],
// RUN: tilejit run $(dirname %s)/inputs/tosa_mlp.mlir -k tosa_mlp --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
