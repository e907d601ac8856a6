// fill + matmul + broadcast bias + relu after -linalg-generalize-named-ops
// (inputs/mlp.mlir): the contraction generic (OUT + IN0 * IN1 over loops
// (m, n, k)) is the array front end's matmul, its zero init dropped, and
// the bias add and max fuse into the matmul's group as its epilogue. The
// named-op source (inputs/src/mlp.mlir) imports to the same graph.
// RUN: tilejit emit $(dirname %s)/inputs/mlp.mlir -k mlp --target graph | FileCheck %s
// RUN: tilejit emit $(dirname %s)/inputs/src/mlp.mlir -k mlp --target graph | FileCheck %s
// CHECK: %0 = input f32[16, 64]
// CHECK-NEXT: %1 = input f32[64, 32]
// CHECK-NEXT: %2 = input f32[32]
// CHECK-NEXT: %3 = full f32[] 0
// CHECK-NEXT: %4 = matmul f32[16, 32] %0, %1
// CHECK-NEXT: %5 = reshape f32[1, 32] %2
// CHECK-NEXT: %6 = broadcast_to f32[16, 32] %5
// CHECK-NEXT: %7 = add f32[16, 32] %4, %6
// CHECK-NEXT: %8 = maximum f32[16, 32] %7, %3
// CHECK-NEXT: return %8
// RUN: tilejit emit $(dirname %s)/inputs/mlp.mlir -k mlp --target fuse | FileCheck %s --check-prefix=FUSE
// FUSE: matmul root=%8 members=[%4, %7, %8]
// RUN: tilejit run $(dirname %s)/inputs/mlp.mlir -k mlp --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
