// The row softmax as -linalg-generalize-named-ops prints it
// (inputs/softmax.mlir): each reduction generic becomes one array
// reduction, its -inf and 0 fills (generalized too) recognized as the
// combine's identity and dropped, the broadcast of the row maxima a view.
// RUN: tilejit emit $(dirname %s)/inputs/softmax.mlir -k softmax --target graph | FileCheck %s
// CHECK: %[[X:[0-9]+]] = input f32[8, 100]
// CHECK-NEXT: max f32[8, 1] %[[X]] axes=[1]
// CHECK-NOT: maximum
// CHECK: broadcast_to f32[8, 100]
// CHECK-NEXT: %[[D:[0-9]+]] = subtract f32[8, 100] %[[X]],
// CHECK-NEXT: %[[E:[0-9]+]] = exp f32[8, 100] %[[D]]
// CHECK-NEXT: sum f32[8, 1] %[[E]] axes=[1]
// CHECK-NOT: add
// CHECK: divide f32[8, 100] %[[E]],
// CHECK-NEXT: return
// RUN: tilejit emit $(dirname %s)/inputs/softmax.mlir -k softmax --target fuse | FileCheck %s --check-prefix=FUSE
// FUSE-COUNT-2: reduce root=
// RUN: tilejit run $(dirname %s)/inputs/softmax.mlir -k softmax --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: result0: f32[8, 100]
