"""MetalBackend: AOTInductor for Apple GPUs (device "mps").

Only the code-signing hook is implemented and tested: macOS Hardened Runtime refuses to
load unsigned code, so a library packed into a program file must be signed at export
time.  Compiling for Metal needs a Mac with an MPS-enabled torch; ``preprocess`` raises
NotImplementedError until that is built.

Compile specs:
  codesign_identity  str - identity passed to ``codesign -s``; "-" signs ad hoc.
                           Absent: the library is left unsigned.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from typing import Any

from kiln.exporter.backends.aoti import AotiBackend

__all__ = ["MetalBackend"]


class MetalBackend(AotiBackend):
    DEVICE = "mps"
    COMPILE_SPECS = AotiBackend.COMPILE_SPECS | {"codesign_identity"}

    def aoti_compile_options(self, compile_specs: dict[str, Any]) -> dict[str, Any]:
        opts = super().aoti_compile_options(compile_specs)
        # Metal kernels ship as MSL source compiled at load time: nothing to embed.
        opts.pop("aot_inductor.embed_kernel_binary", None)
        opts["max_autotune"] = True
        opts["padding_stride_threshold"] = math.inf
        return opts

    def codesign_so(self, so_path: str, compile_specs: dict[str, Any]) -> None:
        identity = compile_specs.get("codesign_identity")
        if identity is None or identity == "":
            return
        if sys.platform != "darwin":
            raise RuntimeError(
                f"codesign_identity={identity!r} was given but code signing needs macOS "
                f"(this is {sys.platform}); export on a Mac or drop the spec"
            )
        tool = shutil.which("codesign")
        if tool is None:
            raise RuntimeError(
                "codesign_identity was given but the `codesign` tool is not on PATH "
                "(install the Xcode command line tools: xcode-select --install)"
            )
        argv = [tool, "-f", "-s", str(identity), str(so_path)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(
                f"`{' '.join(argv)}` failed with exit code {done.returncode}: "
                f"{(done.stderr or done.stdout).strip()}"
            )

    def preprocess(self, method_name, exported_program, compile_specs=None):
        raise NotImplementedError(
            "kiln MetalBackend: compiling for Metal (mps) is not implemented yet; only the "
            "codesign_so hook is available. Export for 'cpu' (or 'cuda') instead."
        )
