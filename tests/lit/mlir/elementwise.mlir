// arith and math on tensors through -convert-elementwise-to-linalg
// (inputs/elementwise.mlir): each linalg.generic's body becomes array ops
// over its loops, the splat constants 0-d or full arrays, and the whole
// gelu one elementwise group (one kernel).
// RUN: tilejit emit $(dirname %s)/inputs/elementwise.mlir -k gelu_tanh --target graph | FileCheck %s
// CHECK: %0 = input f32[64, 256]
// CHECK: multiply f32[64, 256] %0, %0
// CHECK: tanh f32[64, 256]
// CHECK: return
// RUN: tilejit emit $(dirname %s)/inputs/elementwise.mlir -k gelu_tanh --target fuse | FileCheck %s --check-prefix=FUSE
// FUSE: elementwise root=
// FUSE-NOT: elementwise root=
// RUN: tilejit emit $(dirname %s)/inputs/elementwise.mlir -k select_exp --target graph | FileCheck %s --check-prefix=SEL
// SEL-DAG: %[[A:[0-9]+]] = input f32[32, 32]
// SEL-DAG: %[[B:[0-9]+]] = input f32[32, 32]
// SEL-DAG: %[[GT:[0-9]+]] = greater bool[32, 32] %[[A]], %[[B]]
// SEL-DAG: %[[SEL:[0-9]+]] = where f32[32, 32] %[[GT]], %[[A]], %[[B]]
// SEL-DAG: %[[E:[0-9]+]] = exp f32[32, 32] %[[SEL]]
// SEL-DAG: %[[D:[0-9]+]] = subtract f32[32, 32] %[[E]], %[[B]]
// SEL: return %[[D]], %[[GT]]
// RUN: tilejit run $(dirname %s)/inputs/elementwise.mlir -k select_exp --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
