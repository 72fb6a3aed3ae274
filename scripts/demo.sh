#!/usr/bin/env bash
# Main job on the built-in default model: set up, build, export, inspect, run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build_dir="${KILN_BUILD_DIR:-build}"
out="${KILN_DEMO_DIR:-demo-out}"
mkdir -p "$out"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
python3 -m kiln.demo_model "$out/default.kiln"
"$build_dir/kiln" inspect "$out/default.kiln"
"$build_dir/kiln" run "$out/default.kiln" --repeat 20 --output-dir "$out/outputs"
