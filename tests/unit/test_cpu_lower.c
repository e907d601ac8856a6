/* The lowering's whole catalogue (test_lower.c: elementwise ops and memory,
 * reductions, scans and sorts, dot and attention, loops and branches, shape
 * ops), run natively instead: each lc_check_* of it becomes a cc_check_*,
 * which compares the LLVM cpu back end with the reference interpreter (and
 * skips, saying why, without LLVM). One source for both, so every kernel
 * added to the catalogue is checked on the cpu too. */
#include <criterion/criterion.h>

#include "cpu_check.h"

#define lc_check_tj cc_check_tj
#define lc_check_ir cc_check_ir
#include "test_lower.c"
