#!/bin/bash
# phasor_find_program / phasor_missing_test (cmake/PhasorTargets.cmake) in a
# small project of their own: configured while its program is missing, the
# test is registered and fails naming the package; once the program is there
# and the package database changes, the next build re-configures by itself
# and the real test runs (and passes). What `make demo` then `make test` does
# with prometheus, chromium, clang and python3 on a fresh machine.
# usage: missing_program_test.sh SOURCE_DIR CMAKE
set -u
SOURCE=$1
CMAKE=$2
CTEST="$(dirname "$CMAKE")/ctest"
T=$(mktemp -d /tmp/phasor-cmake-test-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/src" "$T/bin"
cat >"$T/src/CMakeLists.txt" <<CONF
cmake_minimum_required(VERSION 3.22)
project(missing_program_check NONE)
include($SOURCE/cmake/PhasorTargets.cmake)
enable_testing()
phasor_find_program(CHECK_PROGRAM NAMES phasor-check-program-0a9f PACKAGE phasor-check-package)
if(CHECK_PROGRAM)
  add_test(NAME needs_the_program COMMAND \${CHECK_PROGRAM})
else()
  phasor_missing_test(needs_the_program PROGRAM phasor-check-program-0a9f PACKAGE phasor-check-package)
endif()
CONF
echo "Package: one" >"$T/status"
export PATH="$T/bin:$PATH"

"$CMAKE" -S "$T/src" -B "$T/build" -G Ninja -DPHASOR_PACKAGE_DB="$T/status" >"$T/configure.log" 2>&1 ||
  fail "configure: $(cat "$T/configure.log")"
"$CTEST" --test-dir "$T/build" -N | grep -q "needs_the_program" || fail "the test is not registered while its program is missing"
out=$("$CTEST" --test-dir "$T/build" --output-on-failure 2>&1) && fail "the placeholder passed: $out"
echo "$out" | grep -q "apt-get install phasor-check-package" || fail "the failure does not name the package: $out"
echo "ok: missing program -> a failing test naming phasor-check-package"

# The program arrives with its package (the database changes): the next build
# re-configures on its own and registers the real test.
printf '#!/bin/sh\nexit 0\n' >"$T/bin/phasor-check-program-0a9f"
chmod 755 "$T/bin/phasor-check-program-0a9f"
sleep 1  # a newer mtime than build.ninja's
echo "Package: two" >>"$T/status"
"$CMAKE" --build "$T/build" >"$T/build.log" 2>&1 || fail "build: $(cat "$T/build.log")"
grep -qi "re-running cmake" "$T/build.log" || fail "the build did not re-configure: $(cat "$T/build.log")"
out=$("$CTEST" --test-dir "$T/build" --output-on-failure 2>&1) || fail "the real test did not pass: $out"
echo "$out" | grep -q "needs_the_program .*Passed" || fail "the real test did not run: $out"
echo "ok: installed -> the next build re-configures and the real test passes"
