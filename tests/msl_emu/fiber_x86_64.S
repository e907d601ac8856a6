/* User-space context switch for the emulator's threads (x86-64 System V).
 *
 *   void mtl_fiber_switch(void **save_sp, void *to_sp);
 * saves the callee-saved registers, MXCSR and the x87 control word on the
 * current stack, stores the stack pointer in *save_sp, and resumes the
 * context whose stack pointer is to_sp. No system call (swapcontext saves
 * the signal mask with one per switch).
 *
 * A new context's stack, from its stack pointer up: MXCSR and x87 control
 * word (8 bytes), r15, r14, r13 (argument), r12 (function), rbx, rbp,
 * and the return address mtl_fiber_start, which calls r12(r13). The
 * function never returns (it switches away for the last time). */
        .text
        .globl  mtl_fiber_switch
        .type   mtl_fiber_switch, @function
mtl_fiber_switch:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   mtl_fiber_switch, .-mtl_fiber_switch

        .globl  mtl_fiber_start
        .type   mtl_fiber_start, @function
mtl_fiber_start:
        movq    %r13, %rdi
        callq   *%r12
        ud2
        .size   mtl_fiber_start, .-mtl_fiber_start

        .section .note.GNU-stack,"",@progbits
