# Sourced by the GPU scripts with the build directory as $1: finds the CUDA
# runtime, cuBLASLt, cuDNN and cuFFT (the toolkit's and torch's nvidia wheels') for the
# runtime in that build, and points Kiln's Python wrapper at that build.
build_dir=$1
# shellcheck source=SCRIPTDIR/python_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/python_env.sh"  # the environment setup.sh made, where there is one
libdirs="$build_dir"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d $d ]] && libdirs+=":$d"; done
nv=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null || true)
if [[ -n "$nv" ]]; then
  while IFS= read -r d; do libdirs+=":$d"; done < <(
    find "$nv" \( -name 'libcudnn.so*' -o -name 'libcublasLt.so*' -o -name 'libcufft.so*' -o -name 'libcudart.so*' \) -printf '%h\n' | sort -u)
fi
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_LIBRARY="$build_dir/libkiln.so"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
