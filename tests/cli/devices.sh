# Choosing one GPU of several: `tilejit devices` lists each, `run --device
# cuda:N` runs on device N and refuses one that is not there, naming it.
# Runs against the stand-in driver (tests/unit/fake_libcuda.c: kernels do
# nothing, so only the choice of device is checked here; tests/gpu the rest).
. "$(dirname "$0")/testlib.inc"
T=$TILEJIT
if [ -z "${TJ_FAKE_DRIVER_DIR:-}" ] || [ ! -e "$TJ_FAKE_DRIVER_DIR/libcuda.so.1" ]; then
    echo "SKIP: the stand-in driver is not built (TJ_FAKE_DRIVER_DIR=${TJ_FAKE_DRIVER_DIR:-unset})"
    exit 77
fi
export LD_LIBRARY_PATH="$TJ_FAKE_DRIVER_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TJ_FAKE_CUDA_DEVICES=2 TILEJIT_CACHE_DIR="$WORK/cache"

expect 0 "$T" devices
has out "cuda:0  Fake GPU 0"
has out "cuda:1  Fake GPU 1"

run_on() { expect "$1" "$T" run "$EX/add.tj" -k add --device "$2" --random --shape N=100 -o od; }
run_on 0 cuda:1
run_on 0 cuda:0
run_on 1 cuda:2
has err "device cuda: opening device 2"
run_on 2 cuda:x
has err "unknown device 'cuda:x'"
run_on 2 cpu:1
has err "unknown device 'cpu:1'"
finish
