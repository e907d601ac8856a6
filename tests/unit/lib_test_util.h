/* What the Criterion tests of tilejit lib (test_lib_*.c) share: a library
 * over a fresh jit of one device kind. */
#ifndef TJ_LIB_TEST_UTIL_H
#define TJ_LIB_TEST_UTIL_H

#include <criterion/criterion.h>

#include "tilejit/lib.h"

static inline tj_lib *open_lib(tj_device_kind kind, tj_jit **j)
{
    tj_rt_error err = {{0}};
    *j = tj_jit_open(kind, 0, &err);
    cr_assert(*j, "%s", err.msg);
    tj_lib *l = tj_lib_open(*j, &err);
    cr_assert(l, "%s", err.msg);
    return l;
}

#endif
