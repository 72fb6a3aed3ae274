"""A method's random numbers come from its aoti.seed: the same seed gives the same values call
for call, another seed other values, and successive calls fresh values - through Inductor's own
random kernels (seeded by the randint fallback) and through the random fallbacks themselves."""

from __future__ import annotations

import math

import pytest
import torch

import kiln
from kiln.runtime import Module


class NoisyModel(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x), torch.randn_like(x) * 2.0


@pytest.fixture(scope="module", params=["inductor-random", "fallback-random"])
def program(request, tmp_path_factory):
    x = torch.zeros(64, 128)
    ep = torch.export.export(NoisyModel(), (x,))
    path = tmp_path_factory.mktemp("random") / f"{request.param}.kiln"
    with torch._inductor.config.patch(fallback_random=request.param == "fallback-random"):
        kiln.export(ep, "cpu", verbose=False).save(path)
    return path


def _run(path, seed, calls=2, threads=None):
    options = {"aoti": {"seed": seed}} if seed is not None else {"aoti": {}}
    if threads:
        options["aoti"]["num_threads"] = threads
    with Module(str(path)) as m:
        m.load(options)
        x = torch.zeros(64, 128)
        return [m.execute("forward", [x], output="torch") for _ in range(calls)]


def test_same_seed_same_values_call_for_call(program):
    a, b = _run(program, 7), _run(program, 7, threads=1)
    for call_a, call_b in zip(a, b):
        for ta, tb in zip(call_a, call_b):
            assert torch.equal(ta, tb)


def test_successive_calls_and_other_seeds_differ(program):
    first, second = _run(program, 7)
    assert not torch.equal(first[0], second[0])
    other = _run(program, 8, calls=1)[0]
    assert not torch.equal(first[0], other[0])
    unseeded = _run(program, None, calls=1)[0]
    assert not torch.equal(first[0], unseeded[0])


def test_values_follow_the_distributions(program):
    uniform, normal = _run(program, 11, calls=1)[0]
    n = uniform.numel()
    assert (uniform >= 0).all() and (uniform < 1).all()
    assert abs(uniform.double().mean().item() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(normal.double().mean().item()) < 5 * 2.0 / math.sqrt(n)
    assert abs(normal.double().std().item() - 2.0) < 0.05


def test_seed_must_be_a_non_negative_integer(program):
    with Module(str(program)) as m:
        with pytest.raises(Exception, match="seed"):
            m.load({"aoti": {"seed": -1}})
