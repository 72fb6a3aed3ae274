"""CudaBackend: AOTInductor for NVIDIA GPUs.

Verified on H100/H200 with torch 2.11 + CUDA 13 through scripts/gpu_test.sh (exporting
needs a GPU: Triton compiles and autotunes for the local one).

Compile specs (all optional; fuse_projections, common to every backend and on by default
here, is in backends/aoti.py):
  max_autotune   bool, default True  - autotune GEMM/conv templates
  triton_only    bool, default True  - GEMM/conv from Triton templates only, so the library
                                       needs no cuBLAS/cuDNN: convolutions are first rewritten
                                       as im2col + matmul (passes/conv_decomposition.py), since
                                       Inductor's Triton conv template covers only plain 2-d
  emit_multi_arch_kernel bool, default True - fatbin for every arch in TORCH_CUDA_ARCH_LIST
  emulate_precision_casts bool, default True
  combo_kernels  bool, default True  - Inductor's horizontal fusion (COMBO_KERNELS below);
                                       left at its default, a method Inductor cannot combine
                                       (COMBO_KERNEL_FAILURES) compiles again without it
  autotune_at_compile_time bool      - forwarded to triton.autotune_at_compile_time if given
  sdpa           "decompose" (default) - scaled_dot_product_attention becomes matmuls and a
                                       softmax that Inductor fuses into its own Triton kernels
                 "fused"             - PyTorch's fused SDPA (flash / efficient / cuDNN, as
                                       PyTorch picks for the GPU) stays a fallback op that
                                       Kiln's attention kernel runs
                 With "decompose", torch.export the model under
                 torch.nn.attention.sdpa_kernel(SDPBackend.MATH) when it views the attention
                 output: the fused kernels return another memory layout than the math
                 path the library is compiled with, and a recorded view may not fit it
                 (Inductor then fails with "Cannot view a tensor with shape ...").
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, ContextManager

from kiln.exporter.backends.aoti import AotiBackend
from kiln.exporter.compile_specs import spec_bool

__all__ = ["CudaBackend"]


class CudaBackend(AotiBackend):
    DEVICE = "cuda"
    #: Fewer, larger GEMVs per decode step (passes/projection_fusion.py): Gemma3 decode 8-10 % faster
    #: on an H100 (CHANGELOG.md).
    FUSE_PROJECTIONS = True
    #: Default of compile spec combo_kernels (Inductor's horizontal fusion: independent
    #: small kernels launch as one). Gemma3 decode on an H100: 133 -> 93 Triton kernels,
    #: 3.5 % faster with CUDA graphs and 5-9 % without (CHANGELOG.md).
    COMBO_KERNELS = True
    #: The CUDA rms_norm_linear is the GEMV kernel with an RMSNorm prologue (decode steps).
    NORM_LINEAR_MAX_ROWS = 4
    COMPILE_SPECS = AotiBackend.COMPILE_SPECS | {
        "max_autotune", "triton_only", "emit_multi_arch_kernel", "emulate_precision_casts", "combo_kernels",
        "autotune_at_compile_time", "sdpa",
    }

    def _require_cuda(self) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "kiln CudaBackend: torch.cuda is not available (torch "
                f"{torch.__version__}, CUDA build {torch.version.cuda or 'none'}). Exporting for CUDA "
                "compiles Triton kernels for the local GPU: run the export on a machine with an NVIDIA "
                "GPU and a CUDA-enabled torch."
            )

    def aoti_compile_options(self, compile_specs: dict[str, Any]) -> dict[str, Any]:
        opts = super().aoti_compile_options(compile_specs)
        opts.update(
            {
                "aot_inductor.embed_kernel_binary": True,
                "aot_inductor.emit_multi_arch_kernel": spec_bool(compile_specs, "emit_multi_arch_kernel", True),
                "max_autotune": spec_bool(compile_specs, "max_autotune", True),
                "loop_ordering_after_fusion": False,
                "emulate_precision_casts": spec_bool(compile_specs, "emulate_precision_casts", True),
            }
        )
        if spec_bool(compile_specs, "triton_only", True):
            opts["max_autotune_gemm_backends"] = "TRITON"
            opts["max_autotune_conv_backends"] = "TRITON"
        # Independent pointwise/reduction kernels become one launch (horizontal
        # fusion): fewer of the small kernels that decode steps are made of.
        opts["combo_kernels"] = spec_bool(compile_specs, "combo_kernels", self.COMBO_KERNELS)
        if "autotune_at_compile_time" in compile_specs:
            opts["triton.autotune_at_compile_time"] = spec_bool(compile_specs, "autotune_at_compile_time", False)
        return opts

    #: Inductor's combo kernels cannot hold a persistent reduction over a dynamic dimension
    #: (torch 2.11, triton_combo_kernel.py); the stock options, without combo kernels, compile
    #: such a graph (m2m100 with a dynamic sequence length).
    COMBO_KERNEL_FAILURES = ("Dynamic shape on reduction dimension is not supported",)

    def compile_retry_options(self, error, options, compile_specs):
        if not options.get("combo_kernels") or "combo_kernels" in compile_specs:
            return None  # off, or asked for explicitly: the caller sees the error
        if not any(text in message for message in _messages(error) for text in self.COMBO_KERNEL_FAILURES):
            return None
        reason = "without combo kernels (Inductor cannot combine a persistent reduction over a dynamic dimension)"
        return {**options, "combo_kernels": False}, reason

    def decomposition_table(self, compile_specs: dict[str, Any]) -> dict:
        if not spec_bool(compile_specs, "triton_only", True):
            return {}
        from kiln.exporter.passes.conv_decomposition import convolution_decompositions

        return convolution_decompositions()

    def extra_compile_context(self, compile_specs: dict[str, Any]) -> ContextManager:
        sdpa = str(compile_specs.get("sdpa", "decompose")).lower()
        if sdpa == "fused":
            return contextlib.nullcontext()
        if sdpa != "decompose":
            raise ValueError(f"compile spec 'sdpa': {compile_specs['sdpa']!r} is not 'decompose' or 'fused'")
        # The math SDPA decomposes into ops Inductor generates itself, so the library
        # needs no attention fallback.
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel([SDPBackend.MATH])

    def prepare_program(self, ep, compile_specs: dict[str, Any]):
        self._require_cuda()
        import torch
        from torch.export.passes import move_to_device_pass

        # With an index: graphs from models that call .to(device) hold
        # _assert_tensor_metadata(device=cuda:0) nodes, which a bare "cuda" fails.
        return move_to_device_pass(ep, f"cuda:{torch.cuda.current_device()}")

    def library_metadata(self, out_dir, so_path, imports, compile_specs) -> dict[str, str]:
        import torch

        meta = {"cuda_version": str(torch.version.cuda)}
        major, minor = torch.cuda.get_device_capability()
        meta["cuda_compile_capability"] = f"{major}.{minor}"
        meta["cuda_archs"] = os.environ.get("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
        meta["cuda_device_name"] = torch.cuda.get_device_name()
        return meta

    def preprocess(self, method_name, exported_program, compile_specs=None):
        self._require_cuda()
        specs = dict(compile_specs or {})
        if "TORCH_CUDA_ARCH_LIST" not in os.environ and spec_bool(specs, "emit_multi_arch_kernel", True):
            # emit_multi_arch_kernel builds for TORCH_CUDA_ARCH_LIST; default to this GPU.
            import torch

            major, minor = torch.cuda.get_device_capability()
            with _env("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}"):
                return super().preprocess(method_name, exported_program, specs)
        return super().preprocess(method_name, exported_program, specs)


@contextlib.contextmanager
def _env(key: str, value: str):
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def _messages(error: BaseException):
    """The messages of ``error`` and of the errors it was raised from (Inductor wraps the
    code generator's error in its own)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield str(error)
        error = error.__cause__ or error.__context__
