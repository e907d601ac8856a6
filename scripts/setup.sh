#!/bin/sh
# Sets tilejit up on Debian 12 and builds it:
#   ./scripts/setup.sh        install what is missing, build build/
#   ./scripts/setup.sh demo   ... then run every example (scripts/demo.sh)
#   ./scripts/setup.sh test   ... then build build-asan/ (ASan + UBSan) too and
#                             run the whole test suite in both
# demo and test also install the Python package (pip install .) with numpy,
# ml_dtypes and pytest into a virtual environment, .venv/.
# Packages are installed with apt-get only when one is missing (as root, or
# through sudo); a machine without apt-get (e.g. the GPU machine), or where
# apt-get fails, goes on without them. Re-running it is fast: nothing is
# installed or rebuilt twice.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
case $mode in
"" | demo | test) ;;
*)
    echo "usage: scripts/setup.sh [demo|test]" >&2
    exit 2
    ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
packages="cmake gcc make libcriterion-dev llvm-22-tools llvm-22-dev clang-22 libclang-rt-22-dev libmlir-22-dev mlir-22-tools python3 python3-venv pkg-config"

# A package counts as present when dpkg has it installed or, for the tools,
# when the command is on PATH (e.g. a cmake from pip).
is_installed() {
    case $1 in
    cmake | gcc | make | python3 | clang-22) command -v "$1" >/dev/null 2>&1 && return 0 ;;
    esac
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'
}

install_packages() {
    if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
        echo "setup: no apt-get here; not installing packages"
        return 0
    fi
    missing=""
    for p in $packages; do
        is_installed "$p" || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "setup: these packages are missing and installing them needs root:$missing" >&2
            exit 1
        fi
        sudo=sudo
    fi
    echo "setup: installing$missing"
    # shellcheck disable=SC2086
    if ! $sudo apt-get update -qq ||
        ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing; then
        # e.g. no network: build what can be built; tests whose tool is missing skip
        echo "setup: could not install$missing; going on without them" >&2
    fi
}

require_tools() {
    for tool in cmake make cc; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "setup: '$tool' not found; install cmake, make and a C compiler" >&2
            exit 1
        fi
    done
}

# build DIR [CMAKE OPTIONS...]: configures and builds (both quick when done).
build() {
    dir=$root/$1
    shift
    cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJ_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
}

# run_tests DIR: runs ctest there and records a one-line summary.
summary=""
status=0
run_tests() {
    log=$root/$1/ctest.log
    if ctest --test-dir "$root/$1" --output-on-failure -j "$jobs" >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
    fi
    cat "$log"
    line=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
    summary="$summary
  $1: ${line:-no test summary (see $log)} [$result]"
}

# python_package: .venv with numpy, ml_dtypes, pytest, scikit-build-core and
# tilejit itself (pip install ., built incrementally in build-pip/). A venv
# because Debian's pip refuses system installs. Without venv support or a
# package index it goes on: the Python tests then skip, saying why.
python_package() {
    venv=$root/.venv
    if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        echo "setup: python3 -m venv failed (python3-venv missing?); the Python tests will skip" >&2
        return 0
    fi
    if ! "$venv/bin/python" -m pip install -q numpy ml_dtypes pytest scikit-build-core ||
        ! "$venv/bin/python" -m pip install -q --no-build-isolation "$root"; then
        echo "setup: could not install the Python package into .venv (no package index?); going on" >&2
    fi
}

install_packages
require_tools
build build
[ -z "$mode" ] || python_package

case $mode in
demo) exec "$root/scripts/demo.sh" ;;
test)
    run_tests build
    # Warnings are build/'s business: sanitizer instrumentation makes gcc warn
    # falsely (maybe-uninitialized), so build-asan/ does not turn them into errors.
    if build build-asan -DTJ_SANITIZE=ON -DTJ_WERROR=OFF; then
        run_tests build-asan
    else
        summary="$summary
  build-asan: the build FAILED (see above)"
        status=1
    fi
    echo
    echo "setup: test summary:$summary"
    exit "$status"
    ;;
esac
echo "setup: built $root/build (tilejit: build/tilejit)"
