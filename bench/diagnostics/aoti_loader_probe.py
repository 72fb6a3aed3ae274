"""Does PyTorch's own AOTI loader run a CUDA package on this machine, alone and
beside Kiln? Compiles a small bf16 MLP with aoti_compile_and_package (libtorch
linking on, as the loader needs), then loads and runs it in fresh processes:
    python3 bench/diagnostics/aoti_loader_probe.py            # compile + both probes
Prints one line per probe: ok with the max error against eager, or how it died.
Each probe runs twice: as it is, and with the system libstdc++ preloaded, which
the GPU image needs (the package library's std::regex code otherwise binds to
libtorch_python.so's template instances and crashes in aoti_load_package)."""

import os
import subprocess
import sys
import tempfile

PROBE = r"""
import sys, ctypes, os
with_kiln = sys.argv[2] == "kiln"
import torch
if with_kiln:
    build = os.environ["KILN_BUILD_DIR"]
    ctypes.CDLL(os.path.join(build, "libkiln.so"))
    ctypes.CDLL(os.path.join(build, "libkiln_cuda.so"), mode=ctypes.RTLD_GLOBAL)
runner = torch._inductor.aoti_load_package(sys.argv[1])
torch.manual_seed(0)
ref = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 64)).cuda().bfloat16()
x = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
out = runner(x)
out = out[0] if isinstance(out, (list, tuple)) else out
err = ((out.float() - ref(x).float()).abs().max() / ref(x).float().abs().max()).item()
print(f"ok rel err {err:.2e}")
"""


def main() -> int:
    import torch

    work = tempfile.mkdtemp(prefix="aoti-probe-")
    pt2 = os.path.join(work, "mlp.pt2")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 64)).cuda().bfloat16()
    x = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)
    ep = torch.export.export(model, (x,))
    torch._inductor.aoti_compile_and_package(ep, package_path=pt2)
    libstdcxx = system_libstdcxx()
    status = 0
    for preload in (None, libstdcxx):
        env = dict(os.environ)
        if preload:
            env["LD_PRELOAD"] = preload
        for mode in ("alone", "kiln"):
            p = subprocess.run([sys.executable, "-c", PROBE, pt2, mode], capture_output=True, text=True,
                               timeout=300, env=env)
            tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
            label = f"{mode}, LD_PRELOAD={preload}" if preload else mode
            print(f"AOTI loader {label}: rc {p.returncode}: {' | '.join(tail)}", flush=True)
            if preload:  # the configuration the benchmark uses must work
                status |= p.returncode != 0
    return status


def system_libstdcxx() -> str | None:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("libstdc++.so.6 ") and ("x86-64" in line or "AArch64" in line):
            return line.split("=>")[-1].strip()
    return None


if __name__ == "__main__":
    sys.exit(main())
