// tensor ops (inputs/slices.mlir, canonicalized): a strided extract_slice
// is a slice with steps, a rank-reducing one a slice and a reshape, expand
// and collapse reshapes, a map with 0 in it a broadcast; insert_slice cuts
// the destination around the slice and concatenates it back, axis by axis.
// RUN: tilejit emit $(dirname %s)/inputs/slices.mlir -k slices --target graph | FileCheck %s
// CHECK: %0 = input f32[8, 16]
// CHECK: slice f32[4, 8] %0 start=[1, 0] stop=[8, 15] step=[2, 2]
// CHECK: reshape f32[128] %0
// CHECK: reshape f32[16, 8]
// CHECK: transpose f32[16, 8] %0 perm=[1, 0]
// RUN: tilejit emit $(dirname %s)/inputs/slices.mlir -k insert --target graph | FileCheck %s --check-prefix=INS
// INS: %3 = slice f32[2, 16] %0 start=[0, 0] stop=[2, 16] step=[1, 1]
// INS-NEXT: %4 = slice f32[4, 16] %0 start=[2, 0] stop=[6, 16] step=[1, 1]
// INS-NEXT: %5 = slice f32[4, 5] %4 start=[0, 0] stop=[4, 5] step=[1, 1]
// INS-NEXT: %6 = slice f32[4, 5] %4 start=[0, 11] stop=[4, 16] step=[1, 1]
// INS-NEXT: %7 = concatenate f32[4, 16] %5, %1, %6 axis=1
// INS-NEXT: %8 = slice f32[2, 16] %0 start=[6, 0] stop=[8, 16] step=[1, 1]
// INS-NEXT: %9 = concatenate f32[8, 16] %3, %7, %8 axis=0
// INS-NEXT: %10 = reshape f32[1, 16] %2
// INS-NEXT: %11 = slice f32[7, 16] %9 start=[0, 0] stop=[7, 16] step=[1, 1]
// INS-NEXT: %12 = concatenate f32[8, 16] %11, %10 axis=0
// RUN: tilejit run $(dirname %s)/inputs/slices.mlir -k slices --random --check --device cpu | FileCheck %s --check-prefix=EXEC
// EXEC: check: result0: {{.*}}: ok
// EXEC: check: result1: {{.*}}: ok
