#!/usr/bin/env bash
# Builds the Python wheel (pip wheel: scikit-build-core runs CMake), installs it
# into a fresh virtual environment and, from a directory outside the source
# tree with no KILN_LIBRARY, exports a CPU model, runs it through kiln.runtime
# and the installed `kiln` CLI, then runs it again with the system's SLEEF
# hidden (a private mount namespace maps /dev/null over libsleef.so.3), so the
# wheel's bundled copy is the only one there is.
#   KILN_WHEEL   test this wheel instead of building one
# Leaves nothing behind (scripts/test.sh checks).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/python_env.sh  # python3 is the environment setup.sh made

scratch=$(mktemp -d "${TMPDIR:-/tmp}/kiln-wheel-XXXXXX")
trap 'rm -rf "$scratch"' EXIT
say() { echo "[wheel test] $*"; }
fail() { echo "[wheel test] $*" >&2; exit 1; }

if [ -n "${KILN_WHEEL:-}" ]; then
  wheel=$KILN_WHEEL
else
  say "building the wheel"
  start=$SECONDS
  # Builds only the runtime's targets (pyproject.toml), in a temporary build
  # directory; --no-cache-dir keeps the wheel out of pip's cache.
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip wheel --no-deps --no-cache-dir -q -w "$scratch/dist" .
  wheel=$(echo "$scratch"/dist/kiln-*.whl)
  say "built $(basename "$wheel") in $((SECONDS - start)) s"
fi
[ -f "$wheel" ] || fail "no wheel at $wheel"

say "installing it into a fresh environment"
venv="$scratch/venv"
python3 -m venv --system-site-packages "$venv"
# torch and numpy may live in the project's environment rather than the system
# Python that --system-site-packages exposes: a .pth file makes them visible,
# after the new environment's own packages, so the wheel's kiln comes first.
python3 -c 'import site; print("\n".join(site.getsitepackages()))' \
  >"$("$venv/bin/python3" -c 'import site; print(site.getsitepackages()[0])')/kiln-test-parent.pth"
"$venv/bin/python3" -m pip install --no-cache-dir -q "$wheel"

run_dir="$scratch/run"
mkdir "$run_dir"
cd "$run_dir"
# Nothing may point back into the source tree or at another build.
unset KILN_LIBRARY KILN_CLI KILN_SLEEF_LIBRARY PYTHONPATH
export PATH="$venv/bin:$PATH"
check="$repo/tests/wheel/check_installed.py"
[ "$(command -v kiln)" = "$venv/bin/kiln" ] || fail "kiln on PATH is $(command -v kiln), not the wheel's"
installed=$(python3 -c 'import kiln, os; print(os.path.dirname(kiln.__file__))')
case "$installed" in "$venv"/*) ;; *) fail "kiln imports from $installed, not the fresh environment" ;; esac

want="kiln $(cat "$repo/VERSION") "
got=$(kiln --version)
[[ $got == "$want"* ]] || fail "kiln --version says '$got', VERSION says ${want% }"

say "exporting, running with kiln.runtime and the CLI"
python3 "$check" export "$run_dir"
python3 "$check" run "$run_dir"
kiln inspect model.kiln >/dev/null
kiln run model.kiln --input input.npy --repeat 0 >/dev/null

say "again with the system SLEEF hidden"
hide=""
for lib in $( (ldconfig -p 2>/dev/null || true) | awk '/libsleef\.so\.3 /{print $NF}'); do
  hide+="mount --bind /dev/null $(readlink -f "$lib") && "
done
[ -n "$hide" ] || say "(no system SLEEF on this machine: it is hidden already)"
if ! unshare -rm true 2>/dev/null; then
  # The run above already checked that the wheel's SLEEF is the only one mapped; hiding the
  # system's needs a mount namespace. Machines that must prove it set KILN_WHEEL_HIDE_SLEEF=1.
  msg="unshare -rm failed: this kernel allows no unprivileged mount namespace, so the system SLEEF cannot be hidden"
  [[ ${KILN_WHEEL_HIDE_SLEEF:-0} == 1 ]] && fail "$msg"
  say "NOT RUN: $msg"
  say "passed, without the run with the system SLEEF hidden"
  exit 0
fi
unshare -rm bash -euc "$hide
  if python3 -c 'import ctypes; ctypes.CDLL(\"libsleef.so.3\")' 2>/dev/null; then
    echo '[wheel test] libsleef.so.3 still opens from the system library path' >&2; exit 1
  fi
  python3 '$check' run '$run_dir'
  kiln run model.kiln --input input.npy --repeat 0 >/dev/null"
say "passed"
