// fill + matmul + broadcast bias + relu after -linalg-generalize-named-ops
// (inputs/mlp.mlir): the contraction generic (OUT + IN0 * IN1 over loops
// (m, n, k)) is the array front end's matmul, its zero init dropped, and
// the bias add and max fuse into the matmul's group as its epilogue. The
// named-op source (inputs/src/mlp.mlir) imports to the same graph.
// RUN: tilejit emit $(dirname %s)/inputs/mlp.mlir -k mlp --target graph | FileCheck %s
// RUN: tilejit emit $(dirname %s)/inputs/src/mlp.mlir -k mlp --target graph | FileCheck %s
// CHECK-DAG: %[[X:[0-9]+]] = input f32[16, 64]
// CHECK-DAG: %[[W:[0-9]+]] = input f32[64, 32]
// CHECK-DAG: %[[B:[0-9]+]] = input f32[32]
// CHECK-DAG: %[[ZERO:[0-9]+]] = full f32[] 0
// CHECK-DAG: %[[MM:[0-9]+]] = matmul f32[16, 32] %[[X]], %[[W]]
// CHECK-DAG: %[[B1:[0-9]+]] = reshape f32[1, 32] %[[B]]
// CHECK-DAG: %[[BB:[0-9]+]] = broadcast_to f32[16, 32] %[[B1]]
// CHECK-DAG: %[[SUM:[0-9]+]] = add f32[16, 32] %[[MM]], %[[BB]]
// CHECK-DAG: %[[RELU:[0-9]+]] = maximum f32[16, 32] %[[SUM]], %[[ZERO]]
// CHECK: return %[[RELU]]
// CHECK-NOT: full f32[16, 32]
// RUN: tilejit emit $(dirname %s)/inputs/mlp.mlir -k mlp --target fuse | FileCheck %s --check-prefix=FUSE
// FUSE: matmul root=%{{[0-9]+}} members=[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}]
// FUSE-NOT: elementwise
// RUN: tilejit run $(dirname %s)/inputs/mlp.mlir -k mlp --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
