"""Weight-only quantization (compile spec ``quantize``, passes/weight_quantization.py): the
spec's grammar, the codes and scales (against the bounds the schemes promise, not against
themselves), the graph rewrite, and programs that Kiln's runtime runs to the same result
as eager PyTorch on the same quantized weights, on fresh inputs."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn

import kiln
from kiln.exporter import kiln_ops
from kiln.exporter import quantized_weights as qw
from kiln.exporter.passes.weight_quantization import parse_quantize_spec, quantize_weights
from kiln.runtime import Module

os.environ["KILN_POISON_ALLOCATIONS"] = "1"

VOCAB, D, INTER = 96, 128, 256


class TinyDecoder(nn.Module):
    """Embedding tied to the output projection, a biased and a bias-free linear, a
    non-contiguous input to one of them (a transposed view), and an output that is a
    linear's result."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.up = nn.Linear(D, INTER)
        self.down = nn.Linear(INTER, D, bias=False)
        self.mix = nn.Linear(D, D, bias=False)
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.head.weight = self.emb.weight
        self.to(dtype)

    def forward(self, ids):
        h = self.emb(ids)
        h = h + self.down(torch.relu(self.up(h)))
        mixed = self.mix(h.transpose(0, 1)).transpose(0, 1)
        return self.head(h + mixed)


def export_decoder(model):
    seq = torch.export.Dim("seq", min=1, max=64)
    return torch.export.export(model, (torch.randint(0, VOCAB, (2, 5)),), dynamic_shapes=({1: seq},))


def ops_in(ep) -> dict:
    counts = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            counts[str(n.target)] = counts.get(str(n.target), 0) + 1
    return counts


# ---- the spec -------------------------------------------------------------------------


def test_spec_grammar():
    s = parse_quantize_spec("int4,group=64,embedding=int8,skip=lm_head,skip=gate")
    assert (s.linear, s.group_size, s.embedding, s.skip) == ("int4", 64, "int8", ["lm_head", "gate"])
    assert parse_quantize_spec("INT8").linear == "int8" and parse_quantize_spec("int8").group_size == 128
    assert not parse_quantize_spec("none").active() and not parse_quantize_spec("").active()
    assert parse_quantize_spec("embedding=int8").active() and parse_quantize_spec("embedding=int8").linear == "none"
    for bad in ("int3", "int4,group=48", "int8,embedding=int4", "int8,skip="):
        with pytest.raises(ValueError, match="compile spec 'quantize'"):
            parse_quantize_spec(bad)


# ---- codes and scales -------------------------------------------------------------------


@pytest.mark.parametrize("group", [None, 32])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_int8_codes_are_within_half_a_step(dtype, group):
    torch.manual_seed(0)
    w = (torch.randn(64, 96) * torch.rand(64, 1) * 3).to(dtype)
    w[5] = 0  # an all-zero row: scale tiny, codes 0
    q = qw.quantize_int8(w, group)
    groups = 1 if group is None else 96 // group
    assert q.codes.dtype == torch.int8 and q.scales.dtype == dtype and q.scales.shape == (64, groups)
    assert int(q.codes.abs().max()) <= 127 and torch.equal(q.codes[5], torch.zeros(96, dtype=torch.int8))
    step = q.scales.float().repeat_interleave(96 // groups, dim=1)
    assert ((q.dequantize() - w.float()).abs() <= step / 2 + 1e-6 * w.float().abs()).all()
    with pytest.raises(ValueError, match="does not divide"):
        qw.quantize_int8(w, 64)


def test_int8_groups_bound_the_error_of_an_outlier_to_its_group():
    w = torch.randn(4, 256) * 0.01
    w[:, 3] = 5.0  # one large weight a row
    per_row, grouped = qw.quantize_int8(w), qw.quantize_int8(w, 128)
    tail = slice(128, 256)  # the group without the outlier
    assert (grouped.dequantize() - w)[:, tail].abs().max() < (per_row.dequantize() - w)[:, tail].abs().max() / 50


@pytest.mark.parametrize("group", [32, 64, 128])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_int4_codes_are_within_half_a_step_of_their_group(group, dtype):
    torch.manual_seed(1)
    w = (torch.randn(16, 256) + torch.randn(16, 1)).to(dtype)
    w[3, :group] = 0.25  # a constant group: scale 0, every code 8, exact
    q = qw.quantize_int4(w, group)
    assert q.codes.dtype == torch.uint8 and int(q.codes.max()) <= 15
    assert q.scales.shape == q.zeros.shape == (16, 256 // group)
    assert torch.equal(q.codes[3, :group], torch.full((group,), 8, dtype=torch.uint8))
    step = q.scales.float().repeat_interleave(group, dim=1)
    # bfloat16 scales and zeros are rounded before the codes are chosen: allow their rounding.
    slack = 1e-5 if dtype == torch.float32 else 2 ** -7 * w.float().abs().amax()
    assert ((q.dequantize() - w.float()).abs() <= step / 2 + slack).all()
    with pytest.raises(ValueError, match="does not divide"):
        qw.quantize_int4(w, 96)


def test_nibble_packing_is_what_the_op_reads():
    torch.manual_seed(2)
    codes = torch.randint(0, 16, (6, 64), dtype=torch.uint8)
    packed = qw.pack_nibbles(codes)
    assert packed.shape == (6, 32)
    assert torch.equal(packed[:, 3] & 0xF, codes[:, 6]) and torch.equal(packed[:, 3] >> 4, codes[:, 7])
    q = qw.Int4Weight(codes, torch.rand(6, 2), torch.randn(6, 2), 32)
    torch.testing.assert_close(kiln_ops.dequantize_int4(packed, q.scale_zero(), 32), q.dequantize())


# ---- the rewrite -------------------------------------------------------------------------


def test_the_pass_replaces_linears_and_embeddings_and_drops_the_float_weights():
    torch.manual_seed(3)
    model = TinyDecoder().eval()
    ep = export_decoder(model)
    before = dict(ep.state_dict)
    notes = []
    q = quantize_weights(ep, parse_quantize_spec("int8,embedding=int8"), log=notes.append)
    ops = ops_in(q)
    assert ops.get("kiln.int8_linear.default") == 4 and "aten.linear.default" not in ops
    assert ops.get("aten.embedding.default") == 2  # codes and scales
    assert set(ep.state_dict) == set(before)  # the caller's program is left as it was
    floats = [name for name, t in q.state_dict.items()
              if t.dtype == torch.float32 and t.dim() == 2 and not name.endswith("_scale")]
    assert floats == [], floats  # no float weight is left, the tied one included
    assert q.state_dict["up.weight_int8_scale"].shape == (INTER, D // 128)  # groups of 128 inputs
    assert q.state_dict["head.weight_int8"].dtype == torch.int8
    assert "4 linear-int8" in notes[0] and "1 embedding-int8" in notes[0]
    ids = torch.randint(0, VOCAB, (2, 9))
    with torch.no_grad():
        got, want = q.module()(ids), model(ids)
    assert (got - want).norm() / want.norm() < 2e-2


def test_skip_and_unsupported_shapes_stay_float():
    torch.manual_seed(4)
    model = TinyDecoder().eval()
    q = quantize_weights(export_decoder(model), parse_quantize_spec("int8,skip=mix"))
    assert ops_in(q).get("aten.linear.default") == 1 and ops_in(q).get("kiln.int8_linear.default") == 3
    # The tied weight keeps its float copy for the embedding, which stays float.
    assert q.state_dict["head.weight"].dtype == torch.float32
    notes = []
    quantize_weights(export_decoder(model), parse_quantize_spec("int4,group=256"),
                     log=notes.append)
    assert "K not a multiple of 256" in notes[0]


def test_a_device_without_the_ops_is_refused():
    from kiln.exporter.backends.metal import MetalBackend

    for scheme in ("int4", "int8"):
        with pytest.raises(ValueError, match=f"{scheme} linears are not implemented on mps"):
            MetalBackend().custom_passes({"quantize": scheme, "grouped_mm": "off"})
    with pytest.raises(ValueError, match="compile spec 'quantize'"):
        MetalBackend().custom_passes({"quantize": "int5"})


# ---- programs on Kiln's CPU runtime ------------------------------------------------------


def run_program(tmp_path, ep, spec, ids_list):
    program = kiln.export(ep, backend="cpu", compile_specs={"quantize": spec}, verbose=False)
    imports = dict(program.methods["forward"].metadata)["shim_imports"].split(",")
    assert "aoti_torch_proxy_executor_call_function" not in imports
    path = tmp_path / "q.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    try:
        return imports, [module.execute("forward", [ids.numpy()])[0] for ids in ids_list], path.stat().st_size
    finally:
        module.close()


@pytest.mark.parametrize("spec,shim", [("int8,embedding=int8", "aoti_torch_cpu_int8_linear"),
                                       ("int4,group=32,embedding=int8", "aoti_torch_cpu_int4_linear")])
def test_quantized_program_matches_eager_on_the_same_weights(tmp_path, spec, shim):
    torch.manual_seed(5)
    model = TinyDecoder().eval()
    ep = export_decoder(model)
    reference = quantize_weights(ep, parse_quantize_spec(spec)).module()
    # One row (decode), a few and many (prefill), on fresh inputs.
    inputs = [torch.randint(0, VOCAB, shape) for shape in ((2, 1), (2, 3), (2, 57))]
    imports, outs, _ = run_program(tmp_path, ep, spec, inputs)
    assert shim in imports
    for ids, got in zip(inputs, outs):
        with torch.no_grad():
            want = reference(ids).numpy()
            full = model(ids).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        assert np.linalg.norm(got - full) / np.linalg.norm(full) < 0.1  # and still the model


def test_bfloat16_int8_program(tmp_path):
    torch.manual_seed(6)
    model = TinyDecoder(torch.bfloat16).eval()
    ep = export_decoder(model)
    reference = quantize_weights(ep, parse_quantize_spec("int8")).module()
    ids = torch.randint(0, VOCAB, (2, 4))
    program = kiln.export(ep, backend="cpu", compile_specs={"quantize": "int8"}, verbose=False)
    path = tmp_path / "bf16.kiln"
    program.save(str(path))
    module = Module(str(path))
    module.load({})
    (got,) = module.execute("forward", [ids], output="torch")
    got = got.float().clone()
    module.close()
    with torch.no_grad():
        want = reference(ids).float()
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * float(want.abs().max()))
