"""Kiln served by Triton Inference Server: a model repository of Kiln programs, tritonserver
on 127.0.0.1, HTTP and gRPC requests compared with kiln.runtime and eager PyTorch, bad
requests, unload and reload, and a short concurrent load with the server's memory watched.

tritonserver comes from the nvidia-pytriton wheel (scripts/setup.sh). A machine where it is
missing or cannot start fails these tests with the server's own message: the backend is part
of the build, so a run that cannot check it must not pass."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import models
from triton_harness import REPO_ROOT, TritonServer, write_model


def run_cli(*args):
    """Runs the kiln CLI (KILN_CLI, else the one beside KILN_LIBRARY or in build/)."""
    cli = os.environ.get("KILN_CLI")
    if not cli:
        library = os.environ.get("KILN_LIBRARY")
        cli = str((Path(library).resolve().parent if library else REPO_ROOT / "build") / "kiln")
    proc = subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc

try:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException
except ImportError as e:  # a failure, not a skip: scripts/setup.sh installs the clients
    pytest.fail(f"tritonclient[http,grpc] is not installed ({e}); run scripts/setup.sh", pytrace=False)

NOBATCH_CONFIG = """
backend: "kiln"
max_batch_size: 0
input [{{ name: "{inp}", data_type: TYPE_FP32, dims: [-1, {width}] }}]
output [{{ name: "{out}", data_type: TYPE_FP32, dims: [-1, {out_width}] }}]
instance_group [{{ kind: KIND_CPU, count: 1 }}]
parameters {{ key: "num_threads" value {{ string_value: "1" }} }}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Exported programs and their eager models."""
    root = tmp_path_factory.mktemp("programs")
    mlp_path, two_path, pt2_path = root / "mlp.kiln", root / "two.kiln", root / "mlp.pt2"
    mlp = models.export_mlp(mlp_path)
    two = models.TwoInOut.export(two_path)
    models.package_mlp_pt2(pt2_path, mlp)
    return {"mlp": (mlp_path, mlp), "two": (two_path, two), "mlp_pt2": (pt2_path, mlp)}


@pytest.fixture(scope="module")
def kiln_modules(programs):
    from kiln.runtime import Module

    modules = {name: Module(str(path)) for name, (path, _) in programs.items() if path.suffix == ".kiln"}
    yield modules
    for m in modules.values():
        m.close()


@pytest.fixture(scope="module")
def server(programs, kiln_modules, tmp_path_factory):
    repo = tmp_path_factory.mktemp("repository")
    mlp_meta = kiln_modules["mlp"].method_meta("forward")
    inp, out = mlp_meta.inputs[0].name, mlp_meta.outputs[0].name
    # Configuration filled in by the backend from the program.
    models_dir = {}
    # The batcher waits up to 2 ms for more requests, so concurrent clients' requests run
    # together however fast the server is; auto-complete keeps this and fills in the rest.
    models_dir["mlp"] = ('backend: "kiln"\ninstance_group [{ kind: KIND_CPU }]\n'
                         'dynamic_batching { max_queue_delay_microseconds: 2000 }\n')
    models_dir["two"] = 'backend: "kiln"\n'
    # Written out in full, without batching: requests carry the whole shape, and the
    # program's batch bound (64) is Kiln's to enforce.
    models_dir["mlp_nobatch"] = NOBATCH_CONFIG.format(inp=inp, out=out, width=models.IN_FEATURES,
                                                      out_width=models.OUT_FEATURES)
    # Disagrees with the program (17 features): must fail to load, naming the mismatch.
    models_dir["mlp_badconfig"] = NOBATCH_CONFIG.format(inp=inp, out=out, width=models.IN_FEATURES + 1,
                                                        out_width=models.OUT_FEATURES)
    # A misspelt parameter fails the load instead of being ignored.
    models_dir["mlp_badparam"] = 'backend: "kiln"\nparameters { key: "num_thread" value { string_value: "2" } }\n'
    # The signature policy from parameters: the signed copy loads, the unsigned program is
    # refused by Kiln before any library is loaded.
    keys = tmp_path_factory.mktemp("keys")
    signed = keys / "mlp-signed.kiln"
    run_cli("keygen", "--out", keys / "release")
    run_cli("sign", programs["mlp"][0], "--key", keys / "release.key", "--out", signed)
    policy = (f'parameters {{ key: "require_signature" value {{ string_value: "true" }} }}\n'
              f'parameters {{ key: "trusted_keys_file" value {{ string_value: "{keys / "release.pub"}" }} }}\n')
    models_dir["mlp_signed"] = 'backend: "kiln"\n' + policy
    models_dir["mlp_unsigned"] = 'backend: "kiln"\n' + policy
    # A stock AOTInductor package served as it is (model.pt2, converted when the model loads).
    models_dir["mlp_pt2"] = 'backend: "kiln"\ninstance_group [{ kind: KIND_CPU }]\n'
    sources = {"two": programs["two"][0], "mlp_signed": signed, "mlp_pt2": programs["mlp_pt2"][0]}
    for name, config in models_dir.items():
        write_model(repo, name, sources.get(name, programs["mlp"][0]), config)
    with TritonServer(repo, tmp_path_factory.mktemp("log") / "tritonserver.log") as s:
        yield s


def kiln_run(module, *inputs):
    return module.execute("forward", list(inputs))


def eager(model, *inputs):
    import torch

    with torch.no_grad():
        out = model(*(torch.from_numpy(np.ascontiguousarray(x)) for x in inputs))
    out = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in out]


def http_infer(server, model, named_inputs, outputs=None):
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        ins = []
        for name, array in named_inputs:
            dtype = {np.float32: "FP32", np.int64: "INT64", np.float64: "FP64"}[array.dtype.type]
            i = httpclient.InferInput(name, list(array.shape), dtype)
            i.set_data_from_numpy(array, binary_data=True)
            ins.append(i)
        outs = [httpclient.InferRequestedOutput(o, binary_data=True) for o in outputs] if outputs else None
        return client.infer(model, ins, outputs=outs)
    finally:
        client.close()


def grpc_infer(client, model, named_inputs):
    ins = []
    for name, array in named_inputs:
        dtype = {np.float32: "FP32", np.int64: "INT64", np.float64: "FP64"}[array.dtype.type]
        i = grpcclient.InferInput(name, list(array.shape), dtype)
        i.set_data_from_numpy(array)
        ins.append(i)
    return client.infer(model, ins)


def test_server_serves_the_repository(server):
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        index = {m["name"]: m for m in client.get_model_repository_index()}
        assert index["mlp"]["state"] == "READY"
        assert index["two"]["state"] == "READY"
        assert index["mlp_nobatch"]["state"] == "READY"
        # The configuration that disagrees with the program and the unknown parameter
        # are refused at load, with the backend's reasons.
        assert index["mlp_badconfig"]["state"] == "UNAVAILABLE"
        assert "dims [-1,17]" in index["mlp_badconfig"]["reason"]
        assert index["mlp_badparam"]["state"] == "UNAVAILABLE"
        assert "unknown parameter 'num_thread'" in index["mlp_badparam"]["reason"]
        assert index["mlp_signed"]["state"] == "READY"
        assert index["mlp_unsigned"]["state"] == "UNAVAILABLE"
        assert "kiln IntegrityError" in index["mlp_unsigned"]["reason"], index["mlp_unsigned"]["reason"]
    finally:
        client.close()


def test_config_is_completed_from_the_program(server, kiln_modules):
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        config = client.get_model_config("two")
        mlp_config = client.get_model_config("mlp")
    finally:
        client.close()
    # A dynamic_batching the configuration gives is kept as written.
    assert int(mlp_config["dynamic_batching"]["max_queue_delay_microseconds"]) == 2000
    assert mlp_config["max_batch_size"] == models.MAX_BATCH
    meta = kiln_modules["two"].method_meta("forward")
    assert config["max_batch_size"] == models.MAX_BATCH  # the program's batch bound
    assert "dynamic_batching" in config
    assert [(i["name"], i["data_type"], [int(d) for d in i["dims"]]) for i in config["input"]] == [
        (meta.inputs[0].name, "TYPE_FP32", [models.IN_FEATURES]),
        (meta.inputs[1].name, "TYPE_INT64", [models.IDS]),
    ]
    outputs = {o["name"]: o for o in config["output"]}
    assert [int(d) for d in outputs[meta.outputs[0].name]["dims"]] == [models.OUT_FEATURES]
    # One float64 per batch item: Triton's [1] reshaped to [].
    scalar = outputs[meta.outputs[1].name]
    assert scalar["data_type"] == "TYPE_FP64"
    assert [int(d) for d in scalar["dims"]] == [1] and scalar["reshape"]["shape"] == []


def test_pt2_package_serves(server, programs, kiln_modules):
    """A repository entry holding a stock .pt2 (model.pt2): loaded, its configuration completed
    from the package, and its answers those of eager PyTorch and of the same model as a .kiln."""
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        index = {m["name"]: m for m in client.get_model_repository_index()}
        assert index["mlp_pt2"]["state"] == "READY", index["mlp_pt2"].get("reason")
        config = client.get_model_config("mlp_pt2")
    finally:
        client.close()
    assert config["max_batch_size"] == models.MAX_BATCH
    assert [int(d) for d in config["input"][0]["dims"]] == [models.IN_FEATURES]
    name_in, name_out = config["input"][0]["name"], config["output"][0]["name"]
    x = np.random.default_rng(7).standard_normal((3, models.IN_FEATURES)).astype(np.float32)
    got = http_infer(server, "mlp_pt2", [(name_in, x)]).as_numpy(name_out)
    np.testing.assert_allclose(got, eager(programs["mlp_pt2"][1], x)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, kiln_run(kiln_modules["mlp"], x)[0], rtol=1e-5, atol=1e-6)


def test_signed_program_serves(server, kiln_modules):
    meta = kiln_modules["mlp"].method_meta("forward")
    x = np.full((2, models.IN_FEATURES), 0.5, np.float32)
    got = http_infer(server, "mlp_signed", [(meta.inputs[0].name, x)]).as_numpy(meta.outputs[0].name)
    np.testing.assert_array_equal(got, kiln_run(kiln_modules["mlp"], x)[0])


@pytest.mark.parametrize("batch", [1, 5, models.MAX_BATCH])
def test_http_matches_kiln_and_eager(server, programs, kiln_modules, batch):
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, models.IN_FEATURES), dtype=np.float32)
    meta = kiln_modules["mlp"].method_meta("forward")
    result = http_infer(server, "mlp", [(meta.inputs[0].name, x)])
    got = result.as_numpy(meta.outputs[0].name)
    (want,) = kiln_run(kiln_modules["mlp"], x)
    np.testing.assert_array_equal(got, want)  # the same program on the same CPU
    np.testing.assert_allclose(got, eager(programs["mlp"][1], x)[0], rtol=1e-5, atol=1e-5)


def test_grpc_two_inputs_two_outputs(server, programs, kiln_modules):
    rng = np.random.default_rng(7)
    meta = kiln_modules["two"].method_meta("forward")
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        for batch in (1, 3, 17):
            x = rng.standard_normal((batch, models.IN_FEATURES), dtype=np.float32)
            ids = rng.integers(0, models.VOCAB, (batch, models.IDS), dtype=np.int64)
            result = grpc_infer(client, "two", [(meta.inputs[0].name, x), (meta.inputs[1].name, ids)])
            want = kiln_run(kiln_modules["two"], x, ids)
            reference = eager(programs["two"][1], x, ids)
            got0 = result.as_numpy(meta.outputs[0].name)
            got1 = result.as_numpy(meta.outputs[1].name)
            assert got0.shape == (batch, models.OUT_FEATURES) and got1.shape == (batch, 1)
            assert got1.dtype == np.float64
            np.testing.assert_array_equal(got0, want[0])
            np.testing.assert_array_equal(got1.reshape(batch), want[1])
            np.testing.assert_allclose(got0, reference[0], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(got1.reshape(batch), reference[1], rtol=1e-5, atol=1e-4)
    finally:
        client.close()


def test_one_requested_output(server, kiln_modules):
    meta = kiln_modules["two"].method_meta("forward")
    x = np.ones((2, models.IN_FEATURES), np.float32)
    ids = np.zeros((2, models.IDS), np.int64)
    result = http_infer(server, "two", [(meta.inputs[0].name, x), (meta.inputs[1].name, ids)],
                        outputs=[meta.outputs[1].name])
    assert result.as_numpy(meta.outputs[0].name) is None
    np.testing.assert_array_equal(result.as_numpy(meta.outputs[1].name).reshape(2),
                                  kiln_run(kiln_modules["two"], x, ids)[1])


def test_bad_requests_get_errors_and_the_server_keeps_serving(server, kiln_modules):
    mlp = kiln_modules["mlp"].method_meta("forward")
    two = kiln_modules["two"].method_meta("forward")
    inp = mlp.inputs[0].name
    good = np.ones((2, models.IN_FEATURES), np.float32)
    cases = {
        "wrong shape": ("mlp", [(inp, np.ones((2, models.IN_FEATURES - 1), np.float32))], "shape"),
        "wrong dtype": ("mlp", [(inp, good.astype(np.float64))], "FP64"),
        "missing input": ("two", [(two.inputs[0].name, good)], two.inputs[1].name),
        "oversized batch": ("mlp", [(inp, np.ones((models.MAX_BATCH + 1, models.IN_FEATURES), np.float32))],
                            "batch"),
        # Triton's checks pass (dims [-1, 16]); Kiln refuses the batch past the program's
        # bound, and its message reaches the client.
        "past the program's bound": ("mlp_nobatch",
                                     [(inp, np.ones((models.MAX_BATCH + 36, models.IN_FEATURES), np.float32))],
                                     "kiln InvalidArgument"),
    }
    for case, (model, inputs, expected) in cases.items():
        for call in (lambda: http_infer(server, model, inputs),
                     lambda: grpc_infer(grpcclient.InferenceServerClient(server.grpc_url), model, inputs)):
            with pytest.raises(InferenceServerException) as info:
                call()
            assert expected in info.value.message(), (case, info.value.message())
        # Still serving, with the right answer.
        (want,) = kiln_run(kiln_modules["mlp"], good)
        np.testing.assert_array_equal(http_infer(server, "mlp", [(inp, good)]).as_numpy(mlp.outputs[0].name), want)


def test_kiln_message_names_the_input_and_bound(server, kiln_modules):
    inp = kiln_modules["mlp"].method_meta("forward").inputs[0].name
    x = np.ones((100, models.IN_FEATURES), np.float32)
    with pytest.raises(InferenceServerException) as info:
        http_infer(server, "mlp_nobatch", [(inp, x)])
    # The message Kiln's own runtime gives for the same call, with its status.
    from kiln.runtime import KilnError

    with pytest.raises(KilnError) as direct:
        kiln_run(kiln_modules["mlp"], x)
    assert f"kiln {direct.value.status}: {direct.value.message}" in info.value.message()


def load(server, clients: int, requests_per_client: int, kiln_module):
    """`clients` gRPC clients sending `requests_per_client` requests of 1 to 4 rows each to mlp,
    every answer checked against kiln.runtime; returns (errors, wrong answers)."""
    meta = kiln_module.method_meta("forward")
    inp, out = meta.inputs[0].name, meta.outputs[0].name
    rng = np.random.default_rng(0)
    samples = [rng.standard_normal((1 + i % 4, models.IN_FEATURES), dtype=np.float32) for i in range(8)]
    expected = [kiln_run(kiln_module, s)[0] for s in samples]
    errors, wrong = [], []

    def client_loop(k):
        client = grpcclient.InferenceServerClient(server.grpc_url)
        try:
            for n in range(requests_per_client):
                s = (k + n) % len(samples)
                try:
                    got = grpc_infer(client, "mlp", [(inp, samples[s])]).as_numpy(out)
                except InferenceServerException as e:
                    errors.append(str(e))
                    continue
                # Batched with other clients' rows, the product's rounding may differ in the
                # last bit from a call of these rows alone; rows of another request would be
                # off by far more.
                if got.shape != expected[s].shape or not np.allclose(got, expected[s], rtol=1e-5, atol=1e-6):
                    wrong.append(s)
        finally:
            client.close()

    threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "load clients did not finish"
    return errors, wrong


def test_concurrent_load_has_no_errors_and_flat_memory(server, kiln_modules):
    # A first round settles the server's pools and caches; the second must not grow it.
    errors, wrong = load(server, 8, 50, kiln_modules["mlp"])
    assert errors == [] and wrong == []
    before = server.rss()
    errors, wrong = load(server, 8, 150, kiln_modules["mlp"])
    after = server.rss()
    assert errors == [], errors[:3]
    assert wrong == []  # batched with other clients' requests, every answer is its own rows
    assert after - before < 16 << 20, f"server RSS grew from {before} to {after} bytes over 1200 requests"
    # Eight clients against one instance with a batcher that waits for more: requests ran
    # together (fewer executions than requests), and the answers above were split right.
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        (stats,) = client.get_inference_statistics("mlp")["model_stats"]
    finally:
        client.close()
    assert int(stats["execution_count"]) < int(stats["inference_count"]), stats


def test_unload_and_reload_free_the_instance(server, kiln_modules):
    client = httpclient.InferenceServerClient(server.http_url)
    inp = kiln_modules["mlp"].method_meta("forward").inputs[0].name
    x = np.ones((3, models.IN_FEATURES), np.float32)
    try:
        def cycle():
            client.unload_model("mlp_nobatch")
            deadline = time.monotonic() + 60
            while client.is_model_ready("mlp_nobatch"):
                assert time.monotonic() < deadline, "mlp_nobatch did not unload"
                time.sleep(0.05)
            client.load_model("mlp_nobatch")
            assert client.is_model_ready("mlp_nobatch")

        for _ in range(3):
            cycle()
        before = server.rss()
        for _ in range(10):
            cycle()
        after = server.rss()
        # Each load maps the program and loads the method's library; an unload that leaked
        # them would grow by at least that much each time.
        assert after - before < 16 << 20, f"RSS grew from {before} to {after} bytes over 10 reloads"
        (want,) = kiln_run(kiln_modules["mlp"], x)
        got = http_infer(server, "mlp_nobatch", [(inp, x)])
        np.testing.assert_array_equal(got.as_numpy(kiln_modules["mlp"].method_meta("forward").outputs[0].name), want)
    finally:
        client.close()
