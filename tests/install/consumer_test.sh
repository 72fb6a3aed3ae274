#!/usr/bin/env bash
# Installs this build into a temporary prefix and uses it the way an
# application would: checks the installed layout, builds examples/consumer
# with find_package(Kiln) and its C program with pkg-config, runs both on a
# small program file, and runs the installed CLI. Removes everything it made.
#
#   consumer_test.sh BUILD_DIR SOURCE_DIR PROGRAM.kiln WITH_CUDA(ON|OFF) [CMAKE_GENERATOR] [WITH_TRITON(ON|OFF)]
set -euo pipefail
build=$1 source=$2 program=$3 with_cuda=$4 generator=${5:-} with_triton=${6:-OFF}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kiln-install-test-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

version=$(tr -d '[:space:]' <"$source/VERSION")
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" || { cat "$scratch/install.log" >&2; fail "cmake --install"; }

# --- layout: what must be there, and nothing else (no example runners, tests, static archive).
libdir=$(dirname "$(find "$prefix" -name libkiln.so -print -quit)")
[ -n "$libdir" ] && [ "$libdir" != . ] || fail "no libkiln.so under $prefix"
libdir=${libdir#"$prefix"/}
expected=(bin/kiln include/kiln/c_api.h include/kiln/module.h include/kiln/version.h
  "$libdir/libkiln.so" "$libdir/libkiln.so.0" "$libdir/libkiln.so.$version"
  "$libdir/cmake/Kiln/KilnConfig.cmake" "$libdir/cmake/Kiln/KilnConfigVersion.cmake"
  "$libdir/cmake/Kiln/KilnTargets.cmake" "$libdir/pkgconfig/kiln.pc")
[ "$with_cuda" = ON ] && expected+=("$libdir/libkiln_cuda.so")
triton_backend=$libdir/kiln/backends/kiln/libtriton_kiln.so
[ "$with_triton" = ON ] && expected+=("$triton_backend")
for f in "${expected[@]}"; do [ -e "$prefix/$f" ] || fail "not installed: $f"; done
[ "$(readlink "$prefix/$libdir/libkiln.so")" = libkiln.so.0 ] || fail "libkiln.so does not link to libkiln.so.0"
unexpected=$(cd "$prefix" && find . ! -type d | sed 's|^\./||' | grep -Ev \
  "^(bin/kiln|include/kiln/[a-z0-9_]+\.h|$libdir/libkiln(_cuda)?\.so[.0-9]*|$libdir/kiln/backends/kiln/libtriton_kiln\.so|$libdir/cmake/Kiln/Kiln[A-Za-z-]*\.cmake|$libdir/pkgconfig/kiln\.pc)$" || true)
[ -z "$unexpected" ] || fail "installed but not part of the package:"$'\n'"$unexpected"
[ -e "$prefix/include/kiln/version.h.in" ] && fail "the template version.h.in was installed"

# --- the installed CLI finds the installed libkiln.so (its run path), not the build's.
cli_version=$(env -u LD_LIBRARY_PATH "$prefix/bin/kiln" --version)
[[ "$cli_version" == "kiln $version "* ]] || fail "installed kiln --version printed '$cli_version'"
loaded=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/kiln" | awk '$1 == "libkiln.so.0" { print $3 }')
[ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$prefix/$libdir/libkiln.so.0")" ] \
  || fail "bin/kiln loads '$loaded', not $prefix/$libdir/libkiln.so.0"

# --- the installed Triton backend loads the installed libkiln.so.0 (its run path), as the server
# opens it from --backend-directory $prefix/$libdir/kiln/backends.
if [ "$with_triton" = ON ]; then
  loaded=$(env -u LD_LIBRARY_PATH ldd "$prefix/$triton_backend" | awk '$1 == "libkiln.so.0" { print $3 }')
  [ -n "$loaded" ] && [ "$(realpath "$loaded")" = "$(realpath "$prefix/$libdir/libkiln.so.0")" ] \
    || fail "the Triton backend loads '$loaded', not $prefix/$libdir/libkiln.so.0"
fi

# Both programs list the golden program's methods (reading the contract needs no library and
# no weights file); a missing file is a clear error (status 1).
check_consumer() {
  local exe=$1 out
  out=$("$exe" "$program") || fail "$exe $program exited with $?"
  grep -q "^Kiln $version" <<<"$out" || fail "$exe did not print the version: $out"
  grep -q "2 method(s)" <<<"$out" || fail "$exe did not list 2 methods: $out"
  grep -q "^  forward (cpu): (x: float32\[batch, 8\], y: int64\[3\]) -> (out: bfloat16\[batch, 8\])$" <<<"$out" \
    || fail "$exe did not describe forward: $out"
  local status=0
  out=$("$exe" "$scratch/missing.kiln" 2>&1) || status=$?
  [ "$status" = 1 ] || fail "$exe on a missing file exited with $status: $out"
  grep -q "^error: $scratch/missing.kiln: NotFound: .*missing.kiln" <<<"$out" \
    || fail "$exe on a missing file did not say so: $out"
  # Running a method goes through the runtime too: the golden program's libraries are
  # placeholder bytes, so loading forward fails, and the error says which method.
  status=0
  out=$("$exe" "$program" forward 2>&1) || status=$?
  [ "$status" = 1 ] && grep -q "^error: forward: InvalidProgram: " <<<"$out" \
    || fail "$exe running forward: status $status: $out"
}

# --- CMake: find_package(Kiln 0.1) against the prefix.
gen=()
[ -n "$generator" ] && gen=(-G "$generator")
cmake -S "$source/examples/consumer" -B "$scratch/consumer" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/configure.log" 2>&1 || { cat "$scratch/configure.log" >&2; fail "configuring examples/consumer"; }
if [ "$with_cuda" = ON ]; then
  grep -q "with the CUDA plugin: $prefix/$libdir/libkiln_cuda.so" "$scratch/configure.log" || fail "Kiln::cuda missing or elsewhere"
else
  grep -q "without the CUDA plugin" "$scratch/configure.log" || fail "Kiln::cuda defined without a plugin"
fi
cmake --build "$scratch/consumer" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log" >&2; fail "building examples/consumer"; }
# Nothing private on the consumers' link line: libkiln.so alone.
if grep -Eiq "openblas|sodium|flatbuffers|libkiln_static" "$scratch/consumer/build.ninja" "$scratch/consumer"/CMakeFiles/*.dir/link.txt 2>/dev/null; then
  fail "a private dependency of libkiln reached the consumer's link line"
fi
check_consumer "$scratch/consumer/kiln-consumer-cpp"
check_consumer "$scratch/consumer/kiln-consumer-c"

# A version this installation does not satisfy is refused (SameMinorVersion).
mkdir "$scratch/too-new"
cat >"$scratch/too-new/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(too_new LANGUAGES NONE)
find_package(Kiln 0.$(( $(cut -d. -f2 <<<"$version") + 1 )) QUIET)
if(Kiln_FOUND)
  message(FATAL_ERROR "found Kiln \${Kiln_VERSION} for a newer minor version")
endif()
CMAKE
cmake -S "$scratch/too-new" -B "$scratch/too-new/build" -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/too-new.log" 2>&1 \
  || { cat "$scratch/too-new.log" >&2; fail "a newer minor version was accepted"; }

# --- pkg-config: the C program built by hand.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
[ "$(pkg-config --modversion kiln)" = "$version" ] || fail "pkg-config --modversion kiln"
# shellcheck disable=SC2046  # pkg-config prints several flags
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags kiln) "$source/examples/consumer/consumer.c" \
  -o "$scratch/pc-consumer" $(pkg-config --libs kiln) -Wl,-rpath,"$(pkg-config --variable=libdir kiln)"
check_consumer "$scratch/pc-consumer"
echo "install tree, find_package(Kiln) and pkg-config consumers: ok"
