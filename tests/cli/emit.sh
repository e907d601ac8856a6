# tilejit emit: targets, -D and --shape bindings, configuration choice,
# unbound dims, output files.
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
ADD=$EX/add.tj

expect 0 "$T" emit "$ADD" -k add --target ir
has out "kernel @add(x: f32[N], y: f32[N], out: f32[N])"
has out "BLOCK = 1024"
has out "grid:"
has out "body:"
empty err
cp out add.ir

expect 0 "$T" emit "$ADD" -k add --target ir -D BLOCK=256
has out "BLOCK = 256"
expect 0 "$T" emit "$ADD" --kernel=add --target=ir -DBLOCK=128
has out "BLOCK = 128"

expect 0 "$T" emit "$ADD" -k add --target ir-opt
has out "kernel @add("

# -o writes the same text to a file (and nothing to stdout)
expect 0 "$T" emit "$ADD" -k add --target ir -o written.ir
empty out
same written.ir add.ir
expect 0 "$T" emit - -k add --target ir <"$ADD"
same out add.ir

# SIMT IR and PTX (default arch sm_90a)
expect 0 "$T" emit "$ADD" -k add --target simt
has out "kernel @add("
has out "simt(threads = "
expect 0 "$T" emit "$ADD" -k add --target ptx
has out ".target sm_90a"
has out ".visible .entry add("
expect 0 "$T" emit "$ADD" -k add --target ptx:sm_80 -o add.ptx
has add.ptx ".target sm_80"

# Metal Shading Language
expect 0 "$T" emit "$ADD" -k add --target msl
has out "#include <metal_stdlib>"
has out "kernel void add("

# names the kernel does not have
expect 1 "$T" emit "$ADD" -k nope --target ir
has err "no kernel named 'nope' (kernels here: add)"
expect 1 "$T" emit "$ADD" -k add --target ir -D BLK=64
has err "-D BLK: kernel 'add' has no tile parameter 'BLK' (tile parameters: BLOCK"
expect 1 "$T" emit "$ADD" -k add --target ir --shape Q=3
has err "--shape Q: kernel 'add' has no dim named 'Q' (parameters: x: f32[N], y: f32[N], out: f32[N])"
expect 1 "$T" emit nofile.tj -k add --target ir
has err "nofile.tj: error: cannot read"

# tune + where: without --shape the where clause on N is skipped and the
# first configuration is taken; --shape N=1000 makes BLOCK the first >= 1000
expect 0 "$T" emit "$EX/softmax.tj" -k softmax --target ir
has out "BLOCK = 256"
expect 0 "$T" emit "$EX/softmax.tj" -k softmax --target ir --shape N=1000
has out "BLOCK = 1024"
expect 0 "$T" emit "$EX/softmax.tj" -k softmax --target ir --shape M=4,N=3000 -D warps=8
has out "BLOCK = 4096"
has out "warps = 8"
# no configuration satisfies the where clause
expect 1 "$T" emit "$EX/softmax.tj" -k softmax --target ir --shape N=100000
has err "softmax.tj:5:"
has err "where BLOCK >= N"

# a dim used as a tile extent must be bound: the error names it
expect 1 "$T" emit "$EX/embed.tj" -k embed --target ir
has err "embed.tj:8:"
has err "dim 'D'"
expect 0 "$T" emit "$EX/embed.tj" -k embed --target ir --shape D=16
has out "kernel @embed("

# --contiguous: the facts of row-major, aligned tensors (vector accesses);
# every dim must be known
expect 0 "$T" emit "$EX/add.tj" -k add --target ptx --shape N=4096 --contiguous
has out "ld.global.v4"
expect 0 "$T" emit "$EX/add.tj" -k add --target ptx --shape N=4096
lacks out "ld.global.v4"
expect 1 "$T" emit "$EX/add.tj" -k add --target ptx --contiguous
has err "the size of dim 'N' of x is not known"
has err "--contiguous needs the size of every dim (give it with --shape)"

# staging regions pinned for a loop's products give way when they leave no room
expect 0 "$T" emit "$(dirname "$0")/pinned_retry.tj" -k retry --target msl --shape M=64,K=32,N=128,R=64,S=96
has out "tilejit: MSL 3.0"
lacks err "error"

# every example compiles to optimized IR, SIMT IR and PTX
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    shapes=$(printf '%s\n' $args | awk 'prev == "--shape" || prev == "-D" { print prev; print } { prev = $0 }')
    for target in ir-opt simt; do
        # shellcheck disable=SC2086
        expect 0 "$T" emit "$EX/$file" -k "$kernel" --target $target $shapes
        has out "kernel @$kernel("
    done
    # shellcheck disable=SC2086
    expect 0 "$T" emit "$EX/$file" -k "$kernel" --target ptx $shapes
    has out ".visible .entry $kernel("
done <"$EX/examples.txt"
finish
