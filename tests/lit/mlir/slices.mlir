// tensor ops (inputs/slices.mlir, canonicalized): a strided extract_slice
// is a slice with steps, a rank-reducing one a slice and a reshape, expand
// and collapse reshapes, a map with 0 in it a broadcast; insert_slice cuts
// the destination around the slice and concatenates it back, axis by axis.
// RUN: tilejit emit $(dirname %s)/inputs/slices.mlir -k slices --target graph | FileCheck %s
// CHECK-DAG: %[[X:[0-9]+]] = input f32[8, 16]
// CHECK-DAG: slice f32[4, 8] %[[X]] start=[1, 0] stop=[8, 15] step=[2, 2]
// CHECK-DAG: %[[FLAT:[0-9]+]] = reshape f32[128] %[[X]]
// CHECK-DAG: %[[BACK:[0-9]+]] = reshape f32[16, 8] %[[FLAT]]
// CHECK-DAG: %[[T:[0-9]+]] = transpose f32[16, 8] %[[X]] perm=[1, 0]
// CHECK-DAG: add f32[16, 8] %[[BACK]], %[[T]]
// RUN: tilejit emit $(dirname %s)/inputs/slices.mlir -k insert --target graph | FileCheck %s --check-prefix=INS
// INS-DAG: %[[X:[0-9]+]] = input f32[8, 16]
// INS-DAG: %[[Y:[0-9]+]] = input f32[4, 6]
// INS-DAG: %[[R:[0-9]+]] = input f32[16]
// INS-DAG: %[[TOP:[0-9]+]] = slice f32[2, 16] %[[X]] start=[0, 0] stop=[2, 16] step=[1, 1]
// INS-DAG: %[[MID:[0-9]+]] = slice f32[4, 16] %[[X]] start=[2, 0] stop=[6, 16] step=[1, 1]
// INS-DAG: %[[LEFT:[0-9]+]] = slice f32[4, 5] %[[MID]] start=[0, 0] stop=[4, 5] step=[1, 1]
// INS-DAG: %[[RIGHT:[0-9]+]] = slice f32[4, 5] %[[MID]] start=[0, 11] stop=[4, 16] step=[1, 1]
// INS-DAG: %[[ROW:[0-9]+]] = concatenate f32[4, 16] %[[LEFT]], %[[Y]], %[[RIGHT]] axis=1
// INS-DAG: %[[BOTTOM:[0-9]+]] = slice f32[2, 16] %[[X]] start=[6, 0] stop=[8, 16] step=[1, 1]
// INS-DAG: %[[A:[0-9]+]] = concatenate f32[8, 16] %[[TOP]], %[[ROW]], %[[BOTTOM]] axis=0
// INS-DAG: %[[R1:[0-9]+]] = reshape f32[1, 16] %[[R]]
// INS-DAG: %[[A7:[0-9]+]] = slice f32[7, 16] %[[A]] start=[0, 0] stop=[7, 16] step=[1, 1]
// INS-DAG: %[[OUT:[0-9]+]] = concatenate f32[8, 16] %[[A7]], %[[R1]] axis=0
// INS: return %[[OUT]]
// RUN: tilejit run $(dirname %s)/inputs/slices.mlir -k insert --random --check --device cpu | FileCheck %s --check-prefix=EXEC-INS
// EXEC-INS: check: result0: {{.*}}: ok
// RUN: tilejit run $(dirname %s)/inputs/slices.mlir -k slices --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
