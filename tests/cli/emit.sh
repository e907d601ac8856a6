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

# back ends that have not landed yet
for t in simt ptx ptx:sm_80 ptx:sm_90a msl; do
    expect 1 "$T" emit "$ADD" -k add --target $t
    has err "error: target '${t%%:*}' is not available yet"
    empty out
done

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
has err "where"

# a dim used as a tile extent must be bound: the error names it
expect 1 "$T" emit "$EX/embed.tj" -k embed --target ir
has err "D"
expect 0 "$T" emit "$EX/embed.tj" -k embed --target ir --shape D=16
has out "kernel @embed("

# every example compiles to IR and optimized IR
while read -r file kernel args; do
    case $file in "" | "#"*) continue ;; esac
    shapes=$(printf '%s\n' $args | awk 'prev == "--shape" || prev == "-D" { print prev; print } { prev = $0 }')
    # shellcheck disable=SC2086
    expect 0 "$T" emit "$EX/$file" -k "$kernel" --target ir-opt $shapes
    has out "kernel @$kernel("
done <"$EX/examples.txt"
finish
