/* lower/wgmma_turns.c: the warpgroups of a loop with several wgmma dots
 * (attention's S = Q K^T and O += P V) take turns issuing them, a turn an
 * iteration. */
#ifndef TJ_LOWER_WGMMA_TURNS_H
#define TJ_LOWER_WGMMA_TURNS_H

#include "lower/lower.h"

/* Around the issue of wgmma dot r's group (wgmma_fence .. wgmma_commit):
 * before the body's first such dot wait for this warpgroup's turn, after
 * its last hand the turn to the next one. Nothing where the innermost loop
 * does not take turns. */
void lw_wgmma_take_turn(lw *w, tj_ref r);
void lw_wgmma_pass_turn(lw *w, tj_ref r);

#endif
