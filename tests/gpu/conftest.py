"""The GPU test suite: Kiln on CUDA against eager PyTorch, run on a GPU machine through
scripts/gpu_test.sh (README.md here). Every test carries the `gpu` marker. The CPU run
(scripts/test.sh) collects tests/python only, never this directory.

Without a GPU (and without KILN_GPU_REQUIRED=1) every test is skipped at collection, so
`pytest --collect-only tests/gpu` works anywhere; KILN_GPU_DEVICE=cpu runs the tests that have
a CPU smoke run instead."""

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# The kiln package, the models the CPU tests share (parity_models, layout_cases, pt2_models)
# and this directory's helpers.
for path in (REPO / "python", REPO / "tests" / "python", HERE):
    sys.path.insert(0, str(path))

import gpu_support  # noqa: E402

# kiln.runtime finds the library through KILN_LIBRARY when it first loads it.
os.environ.setdefault("KILN_LIBRARY", str(gpu_support.BUILD / "libkiln.so"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and a CUDA build of Kiln (tests/gpu)")


def pytest_collection_modifyitems(config, items):
    no_gpu = None
    if gpu_support.DEVICE == "cuda" and not gpu_support.REQUIRED and not gpu_support.cuda_available():
        no_gpu = pytest.mark.skip(reason="no CUDA GPU (torch.cuda.is_available() is False); "
                                         "scripts/gpu_test.sh runs this suite on a GPU machine")
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.gpu)
            if no_gpu is not None:
                item.add_marker(no_gpu)


@pytest.fixture(scope="session", autouse=True)
def gpu_environment():
    """The device and the library every test needs; with KILN_GPU_REQUIRED=1 their absence
    fails each test rather than skipping it."""
    if gpu_support.DEVICE == "cuda" and not gpu_support.cuda_available():
        gpu_support.missing("torch sees no CUDA GPU (torch.cuda.is_available() is False)")
    gpu_support.build_file("libkiln.so", "build Kiln there")
    if gpu_support.DEVICE == "cuda":
        gpu_support.build_file("libkiln_cuda.so", "configure with -DKILN_WITH_CUDA=ON")
    import torch

    # Eager references in true float32: Kiln's cuBLASLt calls use no TF32 unless asked, and
    # eager's cuDNN convolutions would otherwise.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def pytest_terminal_summary(terminalreporter):
    out = gpu_support.out_dir()
    for sec in gpu_support.SECTIONS.values():
        if not sec.rows:
            continue
        terminalreporter.write_sep("=", f"kiln gpu: {sec.name}")
        terminalreporter.write_line(sec.render(sec))
        if out is not None:
            sec.write(out)
    if out is not None and gpu_support.SECTIONS:
        terminalreporter.write_line(f"[kiln gpu] tables and JSON in {out}")
