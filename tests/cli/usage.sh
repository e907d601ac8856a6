# tilejit's command line itself: help, version, and every kind of malformed
# command (exit status 2, with a message saying what is wrong).
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
ADD=$EX/add.tj

expect 2 "$T";                                   has err "usage: tilejit COMMAND"
expect 0 "$T" --help;                            has out "tilejit run FILE -k KERNEL"; has out "tilejit devices"; has out "[--random[=SEED] [-o DIR]]"
expect 0 "$T" -h;                                has out "usage: tilejit"
expect 0 "$T" --version;                         has out "tilejit 0."
expect 0 "$T" help run;                          has out "--random[=SEED]"
expect 0 "$T" run --help;                        has out "--check"
expect 0 "$T" emit --help;                       has out "ir-opt"
expect 0 "$T" check -h;                          has out "usage: tilejit check FILE..."
expect 2 "$T" frobnicate;                        has err "unknown command 'frobnicate'"

# missing pieces
expect 2 "$T" check;                             has err "tilejit check: error: no FILE given"
expect 2 "$T" emit "$ADD" --target ir;           has err "missing -k KERNEL"
expect 2 "$T" run "$ADD";                        has err "missing -k KERNEL"
expect 2 "$T" emit "$ADD" -k add;                has err "missing --target TARGET (targets: ir, ir-opt, simt[:sm_XX], ptx[:sm_XX], msl, llvm)"
expect 2 "$T" emit -k add --target ir;           has err "expected one FILE"
expect 2 "$T" emit "$ADD" "$ADD" -k add --target ir; has err "unexpected argument"
expect 2 "$T" run "$ADD" -k;                     has err "option -k needs a value"
expect 2 "$T" run "$ADD" --kernel;               has err "option --kernel needs a value"
expect 2 "$T" run "$ADD" -k add --device;        has err "option --device needs a value"

# targets
expect 2 "$T" emit "$ADD" -k add --target asm;   has err "unknown target 'asm'"
expect 2 "$T" emit "$ADD" -k add --target ir:sm_80; has err "target 'ir' takes no ':ARCH'"
expect 2 "$T" emit "$ADD" -k add --target ptx:80; has err "bad architecture '80'"
expect 2 "$T" emit "$ADD" -k add --target ptx:sm_9x; has err "bad architecture 'sm_9x'"

# bindings
expect 2 "$T" emit "$ADD" -k add --target ir -D BLOCK;      has err "-D expects NAME=INT, got 'BLOCK'"
expect 2 "$T" emit "$ADD" -k add --target ir -D BLOCK=x;    has err "-D expects NAME=INT, got 'BLOCK=x'"
expect 2 "$T" emit "$ADD" -k add --target ir -D 9B=4;       has err "-D expects NAME=INT"
expect 2 "$T" emit "$ADD" -k add --target ir -D BLOCK=99999999999999999999; has err "-D expects NAME=INT"
expect 2 "$T" emit "$ADD" -k add --target ir -D BLOCK=1 -DBLOCK=2; has err "-D BLOCK given twice"
expect 2 "$T" emit "$ADD" -k add --target ir --shape N=-4;  has err "--shape N: -4 is negative"
expect 2 "$T" emit "$ADD" -k add --target ir --shape=N=4,;  has err "--shape expects NAME=INT"
expect 2 "$T" emit "$ADD" -k add --target ir --shape M=1,M=2; has err "--shape M given twice"

# options that do not belong, or take no value
expect 2 "$T" emit "$ADD" -k add --target ir --check;       has err "option --check does not apply to 'emit'"
expect 2 "$T" check "$ADD" -k add;                          has err "option -k does not apply to 'check'"
expect 2 "$T" run "$ADD" -k add --time=3;                   has err "option --time takes no value"
expect 2 "$T" run "$ADD" -k add --frob;                     has err "unknown option '--frob'"
expect 2 "$T" run "$ADD" -k add -q;                         has err "unknown option '-q'"
expect 2 "$T" run "$ADD" -k add -k add;                     has err "-k given twice"
expect 2 "$T" run "$ADD" -k add --random=-1;                has err "--random=SEED expects a non-negative integer"
expect 2 "$T" run "$ADD" -k add --random=x;                 has err "--random=SEED expects a non-negative integer"

# run's arguments
expect 2 "$T" run "$ADD" -k add x.npy;                      has err "expected ARG=VALUE after FILE, got 'x.npy'"
expect 2 "$T" run "$ADD" -k add 1x=a.npy;                   has err "expected ARG=VALUE after FILE"
expect 2 "$T" run "$ADD" -k add x=a.npy x=b.npy;            has err "argument 'x' given twice"
expect 2 "$T" run "$ADD" -k add --device tpu;               has err "unknown device 'tpu' (devices: cpu, interp, cuda, metal)"
expect 2 "$T" run "$ADD" -k add -o outdir;                  has err "-o DIR needs --random"
expect 2 "$T" emit "$ADD" -k add --target ir x=1;           has err "unexpected argument 'x=1'"

# `--` ends the options: a file named like an option
expect 2 "$T" check -- ;                                    has err "no FILE given"
finish
