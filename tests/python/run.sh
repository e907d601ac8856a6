#!/bin/sh
# CTest's entry to the Python tests: pytest on tests/python with the
# build's libtilejit.so. The interpreter: $TJ_PYTHON, else the repository's
# .venv (scripts/setup.sh makes it), else python3. Skips (77) with the
# reason when pytest or numpy is missing, or the library is a sanitizer
# build (python cannot load it without preloading the sanitizer runtime).
#   run.sh SOURCE_DIR LIBRARY
src=$1
lib=$2
py=${TJ_PYTHON:-}
[ -n "$py" ] || { [ -x "$src/.venv/bin/python" ] && py=$src/.venv/bin/python; } || py=python3
if ! command -v "$py" >/dev/null 2>&1; then
    echo "SKIP: no python3"
    exit 77
fi
for module in pytest numpy; do
    if ! "$py" -c "import $module" 2>/dev/null; then
        echo "SKIP: $py has no $module (./scripts/setup.sh test installs it into .venv)"
        exit 77
    fi
done
if ldd "$lib" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    echo "SKIP: $lib is a sanitizer build, which python cannot load without preloading its runtime"
    exit 77
fi
cd "$src" && TILEJIT_LIB=$lib exec "$py" -m pytest -q -rs -p no:cacheprovider tests/python
