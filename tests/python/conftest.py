"""Fixtures of the Python package's tests: the models (../shared/models beside the repository,
and the bundled models/mobilenet_tiny), their reference data sets, and untuned builds made
once per test session."""

from pathlib import Path

import numpy as np
import pytest

import tessera

ROOT = Path(__file__).resolve().parents[2]
SHARED_MODELS = ROOT.parent / "shared" / "models"

# The tolerance of the C++ model tests (tests/compile/model_build_test.cpp, demo.sh):
# |out - ref| <= ATOL + RTOL |ref|; resnet18's Winograd convolutions get atol 1e-4 there.
RTOL, ATOL = 1e-4, 1e-5


def model_dir(name: str) -> Path:
    """The folder of a model: the bundled mobilenet_tiny, or a shared one."""
    return ROOT / "models" / name if name == "mobilenet_tiny" else SHARED_MODELS / name


def data_sets(name: str):
    """The reference data set folders of a model (test_data_set_0, 1, ...)."""
    return sorted(model_dir(name).glob("test_data_set_*"))


def read_arrays(folder: Path, kind: str, count: int):
    """input_0.npy ... or output_0.npy ... of a data set, `count` of them."""
    return [np.load(folder / f"{kind}_{i}.npy") for i in range(count)]


def feeds_of(model: tessera.Model, folder: Path):
    """A data set's inputs as the dict Model.run takes (files in the model's input order)."""
    arrays = read_arrays(folder, "input", len(model.inputs))
    return {t.name: a for t, a in zip(model.inputs, arrays)}


def assert_outputs_match(model: tessera.Model, outputs, folder: Path, rtol=RTOL, atol=ATOL):
    """Every output of a run matches the data set's reference (dtype, shape, values)."""
    assert sorted(outputs) == sorted(t.name for t in model.outputs)
    refs = read_arrays(folder, "output", len(model.outputs))
    for t, ref in zip(model.outputs, refs):
        got = outputs[t.name]
        assert got.dtype == ref.dtype and got.shape == ref.shape, t.name
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=t.name)


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """built(name) -> the path of the model's untuned library, built on first use."""
    folder = tmp_path_factory.mktemp("libraries")
    libraries = {}

    def build(name: str) -> str:
        onnx = model_dir(name) / "model.onnx"
        if not onnx.exists():
            pytest.skip(f"model {name} not found at {onnx}")
        if name not in libraries:
            libraries[name] = tessera.build(onnx, folder / f"{name}.so")
        return libraries[name]

    return build
