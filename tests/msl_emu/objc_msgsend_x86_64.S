/* objc_msgSend for the mock Objective-C runtime (mock_objc.c), x86-64
 * System V. Like Apple's, it finds the implementation of (receiver,
 * selector) and tail-jumps to it with every argument register and the
 * caller's stack untouched, so implementations are plain C functions with
 * the exact prototype of their message (struct arguments included). */
        .text
        .globl  objc_msgSend
        .type   objc_msgSend, @function
objc_msgSend:
        pushq   %rbp
        movq    %rsp, %rbp
        subq    $0xd0, %rsp
        movq    %rdi, 0x00(%rsp)
        movq    %rsi, 0x08(%rsp)
        movq    %rdx, 0x10(%rsp)
        movq    %rcx, 0x18(%rsp)
        movq    %r8, 0x20(%rsp)
        movq    %r9, 0x28(%rsp)
        movq    %rax, 0x30(%rsp)
        movdqu  %xmm0, 0x40(%rsp)
        movdqu  %xmm1, 0x50(%rsp)
        movdqu  %xmm2, 0x60(%rsp)
        movdqu  %xmm3, 0x70(%rsp)
        movdqu  %xmm4, 0x80(%rsp)
        movdqu  %xmm5, 0x90(%rsp)
        movdqu  %xmm6, 0xa0(%rsp)
        movdqu  %xmm7, 0xb0(%rsp)
        call    mock_objc_lookup        /* (id, SEL) -> the implementation */
        movq    %rax, %r11
        movq    0x00(%rsp), %rdi
        movq    0x08(%rsp), %rsi
        movq    0x10(%rsp), %rdx
        movq    0x18(%rsp), %rcx
        movq    0x20(%rsp), %r8
        movq    0x28(%rsp), %r9
        movq    0x30(%rsp), %rax
        movdqu  0x40(%rsp), %xmm0
        movdqu  0x50(%rsp), %xmm1
        movdqu  0x60(%rsp), %xmm2
        movdqu  0x70(%rsp), %xmm3
        movdqu  0x80(%rsp), %xmm4
        movdqu  0x90(%rsp), %xmm5
        movdqu  0xa0(%rsp), %xmm6
        movdqu  0xb0(%rsp), %xmm7
        leave
        jmp     *%r11
        .size   objc_msgSend, .-objc_msgSend

        .section .note.GNU-stack,"",@progbits
