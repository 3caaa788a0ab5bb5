"""Models built with tessera.build and run with tessera.load(...).run(...) match their reference
outputs; the loaded model describes itself as the ONNX model does."""

import json
import threading

import numpy as np
import pytest

import tessera
from conftest import assert_outputs_match, data_sets, feeds_of, model_dir


@pytest.mark.parametrize("name", ["mlp", "small_cnn", "conv_bn_relu", "mobilenet_tiny"])
def test_model_matches_reference_on_every_data_set(built, name):
    model = tessera.load(built(name))
    assert model.name == name
    assert model.target == "cpu"
    sets = data_sets(name)
    assert sets
    for folder in sets:
        assert_outputs_match(model, model.run(feeds_of(model, folder)), folder)


def test_resnet18_matches_reference(built):
    model = tessera.load(built("resnet18"))
    folder = data_sets("resnet18")[0]
    # Winograd convolutions round twice as much as direct ones: atol 1e-4 as in the C++ test.
    assert_outputs_match(model, model.run(feeds_of(model, folder)), folder, atol=1e-4)


@pytest.mark.parametrize("name", ["mlp", "small_cnn", "conv_bn_relu"])
def test_inputs_and_outputs_describe_the_onnx_model(built, name):
    model = tessera.load(built(name))
    meta = json.loads((model_dir(name) / "meta.json").read_text())
    for got, want in ((model.inputs, meta["inputs"]), (model.outputs, meta["outputs"])):
        assert [t.name for t in got] == [w["name"] for w in want]
        for t, w in zip(got, want):
            assert isinstance(t, tessera.TensorInfo) and isinstance(t.shape, tuple)
            assert t.dtype == np.dtype(w["dtype"]) and list(t.shape) == w["shape"]
    if name == "mlp":
        assert repr(model) == (
            "<tessera.Model 'mlp' (cpu) inputs [input: float32[1, 784]] "
            "outputs [logits: float32[1, 10], probs: float32[1, 10]]>"
        )


def test_build_writes_the_model_stem_in_the_current_folder(tmp_path, monkeypatch):
    onnx = model_dir("mlp") / "model.onnx"
    if not onnx.exists():
        pytest.skip("shared model mlp not found")
    monkeypatch.chdir(tmp_path)
    assert tessera.build(onnx) == "model.so"
    assert (tmp_path / "model.so").is_file()
    assert tessera.load("model.so").name == "mlp"  # a bare name is the current folder's file


def test_a_target_string_with_options_builds_for_this_cpu(tmp_path):
    onnx = model_dir("small_cnn") / "model.onnx"
    if not onnx.exists():
        pytest.skip("shared model small_cnn not found")
    lib = tessera.build(onnx, tmp_path / "small_cnn.so", target="llvm -num-cores=1")
    model = tessera.load(lib)
    assert model.target == "cpu"
    folder = data_sets("small_cnn")[0]
    assert_outputs_match(model, model.run(feeds_of(model, folder)), folder)


def test_threads_and_concurrent_runs_give_the_reference(built):
    model = tessera.load(built("mlp"))
    folder = data_sets("mlp")[0]
    feeds = feeds_of(model, folder)
    model.set_num_threads(1)
    assert_outputs_match(model, model.run(feeds), folder)
    model.set_num_threads(0)
    # Runs of one model from several threads wait for each other and each gets its result.
    results, errors = [], []

    def worker():
        try:
            for _ in range(20):
                results.append(model.run(feeds))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 80
    for out in results:
        assert_outputs_match(model, out, folder)


def test_two_libraries_in_one_process(built):
    a, b = tessera.load(built("mlp")), tessera.load(built("small_cnn"))
    for model, name in ((a, "mlp"), (b, "small_cnn"), (a, "mlp")):
        folder = data_sets(name)[0]
        assert_outputs_match(model, model.run(feeds_of(model, folder)), folder)
