/* The GPU tests' assertion: prints FAIL FILE:LINE: MESSAGE and returns 1
 * from the calling function (the tests report by exit status: 0 passed,
 * 1 failed, 77 skipped). */
#ifndef TJ_GPU_CHECK_H
#define TJ_GPU_CHECK_H

#include <stdio.h>

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            printf(__VA_ARGS__);                                                          \
            printf("\n");                                                                 \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

#endif
