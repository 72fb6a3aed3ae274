"""Random numbers on CUDA follow the method's aoti.seed, in both export modes: the seeds
Inductor's generated random kernels start from (randint.low_out on the device) and the random
fallbacks themselves (fallback_random). And a seed draws the same uniform values on CUDA as
on the CPU (the ops share their Philox mapping)."""

from __future__ import annotations

import math

import pytest
import torch

import gpu_support
import kiln
from kiln.runtime import Module

pytestmark = gpu_support.cuda_only


class NoisyModel(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x), torch.randn_like(x) * 2.0


@pytest.fixture(scope="module", params=["inductor-random", "fallback-random"])
def programs(request, tmp_path_factory):
    out = {}
    for device in ("cuda", "cpu"):
        x = torch.zeros(64, 128, device=device)
        ep = torch.export.export(NoisyModel(), (x,))
        path = tmp_path_factory.mktemp("random") / f"{request.param}-{device}.kiln"
        with torch._inductor.config.patch(fallback_random=request.param == "fallback-random"):
            kiln.export(ep, device, verbose=False).save(path)
        out[device] = path
    return request.param, out


def _run(path, seed, device, calls=2):
    with Module(str(path)) as m:
        m.load({"aoti": {"seed": seed}})
        x = torch.zeros(64, 128, device=device)
        return [[t.cpu() for t in m.execute("forward", [x], output="torch")] for _ in range(calls)]


def test_cuda_random_follows_the_seed(programs):
    _, paths = programs
    a, b = _run(paths["cuda"], 5, "cuda"), _run(paths["cuda"], 5, "cuda")
    for ca, cb in zip(a, b):
        for ta, tb in zip(ca, cb):
            assert torch.equal(ta, tb)
    assert not torch.equal(a[0][0], a[1][0]), "successive calls drew the same numbers"
    assert not torch.equal(a[0][0], _run(paths["cuda"], 6, "cuda", calls=1)[0][0])
    uniform, normal = a[0]
    n = uniform.numel()
    assert (uniform >= 0).all() and (uniform < 1).all()
    assert abs(uniform.double().mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(normal.double().std().item() - 2.0) < 0.05


def test_fallback_uniform_values_match_the_cpu(programs):
    mode, paths = programs
    if mode != "fallback-random":
        pytest.skip("Inductor's own random kernels differ by device (Triton vs C++); only Kiln's fallbacks match")
    cuda = _run(paths["cuda"], 9, "cuda", calls=1)[0][0]
    cpu = _run(paths["cpu"], 9, "cpu", calls=1)[0][0]
    torch.testing.assert_close(cuda, cpu, rtol=0, atol=1e-6)
