#!/bin/sh
# The README's C example, taken from README.md (the ```c block under
# "## The C API"), compiled as written against tilejit installed into a
# scratch prefix (cmake --install): with pkg-config, and with
# find_package(tilejit) both shared and static; each must run and print
# what the README says. Also: the SONAME, and no RUNPATH.
#   readme_c_example.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
build=$2
if grep -q '^TJ_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" || grep -q '^TJ_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "SKIP: $build is a sanitizer build; its libraries need the sanitizer runtime to link"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
awk '/^## The C API/ { api = 1 } api && /^```c$/ { code = 1; next } code && /^```$/ { exit } code' \
    "$src/README.md" >"$tmp/example.c"
[ -s "$tmp/example.c" ] || { echo "FAIL: README.md has no \`\`\`c block under '## The C API'"; exit 1; }
want=$(sed -n 's|.*/\* prints: \(.*\) \*/.*|\1|p' "$tmp/example.c")
[ -n "$want" ] || { echo "FAIL: the README's C example has no '/* prints: ... */' comment"; exit 1; }
failures=0
check() { # NAME PROGRAM
    got=$("$2" 2>&1) || true
    if [ "$got" = "$want" ]; then
        echo "ok: $1 prints '$got'"
    else
        echo "FAIL: $1 printed '$got', the README says '$want'"
        failures=$((failures + 1))
    fi
}

pc=$(dirname "$(find "$tmp/prefix" -name tilejit.pc)")
lib=$(dirname "$(find "$tmp/prefix" -name libtilejit.a)")
if command -v readelf >/dev/null 2>&1; then
    dyn=$(readelf -d "$lib/libtilejit.so")
    echo "$dyn" | grep -q 'SONAME.*\[libtilejit\.so\.0\]' || { echo "FAIL: no SONAME libtilejit.so.0"; failures=$((failures + 1)); }
    if echo "$dyn" | grep -q 'RUNPATH\|RPATH'; then echo "FAIL: libtilejit.so has an rpath"; failures=$((failures + 1)); fi
fi

if command -v pkg-config >/dev/null 2>&1; then
    export PKG_CONFIG_PATH="$pc"
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Wextra -Werror -o "$tmp/pkgconfig_example" "$tmp/example.c" \
        $(pkg-config --cflags --libs tilejit) -Wl,-rpath,"$(pkg-config --variable=libdir tilejit)"
    check pkg-config "$tmp/pkgconfig_example"
else
    echo "note: no pkg-config here; only the CMake package is checked"
fi

mkdir "$tmp/consumer"
cp "$tmp/example.c" "$tmp/consumer/"
cat >"$tmp/consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
set(CMAKE_C_STANDARD 11)
find_package(tilejit 0.1 REQUIRED)
add_executable(shared_example example.c)
target_link_libraries(shared_example PRIVATE tilejit::tilejit)
add_executable(static_example example.c)
target_link_libraries(static_example PRIVATE tilejit::static)
EOF
cmake -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/consumer.log" 2>&1 &&
    cmake --build "$tmp/consumer/build" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; exit 1; }
check "find_package(tilejit), tilejit::tilejit" "$tmp/consumer/build/shared_example"
check "find_package(tilejit), tilejit::static" "$tmp/consumer/build/static_example"
exit $((failures > 0))
