/* The last arguments that passed a launch's checks (runtime/launch_memo.c):
 * a launch with the same shapes, strides, dtypes and scalars (data pointers
 * may differ) skips the checks, which cost more than the launch itself.
 * tj_fn keeps one with its grid; tj_dispatch keeps one with the function it
 * picked. The owner guards it. */
#ifndef TJ_LAUNCH_MEMO_H
#define TJ_LAUNCH_MEMO_H

#include "tilejit/interp.h"

enum { TJ_MEMO_ARGS = 16 };

typedef struct tj_launch_memo {
    int valid;
    uint32_t nargs;
    tj_arg args[TJ_MEMO_ARGS];
} tj_launch_memo;

int tj_memo_hit(const tj_launch_memo *m, const tj_arg *args, uint32_t nargs);
/* Remembers args (nothing when there are more than TJ_MEMO_ARGS). */
void tj_memo_store(tj_launch_memo *m, const tj_arg *args, uint32_t nargs);

#endif
