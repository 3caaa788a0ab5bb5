"""Errors of tessera.build, tessera.load and Model.run: tessera.UserError (a tessera.Error) with
one line naming the offending value, as the tessera command prints it."""

import os
import subprocess

import numpy as np
import pytest

import tessera
from conftest import data_sets, feeds_of, model_dir


@pytest.fixture(scope="module")
def mlp(built):
    model = tessera.load(built("mlp"))
    return model, feeds_of(model, data_sets("mlp")[0])["input"]


def user_error(fn, *args, **kwargs) -> str:
    """The message of the UserError fn raises; it is one line."""
    with pytest.raises(tessera.UserError) as e:
        fn(*args, **kwargs)
    message = str(e.value)
    assert isinstance(e.value, tessera.Error) and "\n" not in message and message
    return message


def test_error_classes():
    assert issubclass(tessera.UserError, tessera.Error)
    assert issubclass(tessera.InternalError, tessera.Error)
    assert issubclass(tessera.Error, Exception)
    assert not issubclass(tessera.UserError, tessera.InternalError)


def test_missing_input(mlp):
    model, _ = mlp
    assert user_error(model.run, {}) == "missing input 'input' (expected float32 (1, 784))"


def test_unknown_input(mlp):
    model, x = mlp
    message = user_error(model.run, {"input": x, "image": x})
    assert message == "unknown input 'image' (the model's inputs: input)"


def test_wrong_shape(mlp):
    model, x = mlp
    message = user_error(model.run, {"input": x.reshape(784)})
    assert message == "input 'input': expected shape (1, 784), given (784,)"


def test_wrong_dtype_is_refused_not_converted(mlp):
    model, x = mlp
    message = user_error(model.run, {"input": x.astype(np.float64)})
    assert message == "input 'input': expected dtype float32, given float64"


def test_unconvertible_object_and_wrong_container(mlp):
    model, _ = mlp
    assert "input 'input'" in user_error(model.run, {"input": "pixels"})
    assert user_error(model.run, [1, 2]) == "run takes a dict of input name -> array, got list"


def test_nonexistent_model_file_is_named(tmp_path):
    missing = tmp_path / "no_such_model.onnx"
    message = user_error(tessera.build, missing, tmp_path / "out.so")
    assert str(missing) in message
    # The same line as the command's, less its "error: ".
    tessera_bin = os.environ.get("TESSERA_BINARY")
    if tessera_bin:
        r = subprocess.run([tessera_bin, "build", str(missing), "-o", str(tmp_path / "out.so")],
                           capture_output=True, text=True)
        assert r.returncode == 1
        assert r.stderr.strip() == "error: " + message


def test_bad_build_options_are_named(tmp_path):
    onnx = model_dir("mlp") / "model.onnx"
    if not onnx.exists():
        pytest.skip("shared model mlp not found")
    out = tmp_path / "mlp.so"
    assert "'tpu'" in user_error(tessera.build, onnx, out, target="tpu")
    assert "sm_<digits>" in user_error(tessera.build, onnx, out, target="cuda -arch=80")
    assert "'fp8'" in user_error(tessera.build, onnx, out, precision="fp8")
    assert "got 7" in user_error(tessera.build, onnx, out, opt_level=7)
    assert "no_such.db" in user_error(tessera.build, onnx, out, db=tmp_path / "no_such.db")
    assert "no_such_folder" in user_error(tessera.build, onnx, tmp_path / "no_such_folder/m.so")
    assert "-2" in user_error(tessera.build, onnx, out, input_shapes={"input": [-2, 784]})
    assert not out.exists()


def test_load_refuses_what_is_not_a_model_library(tmp_path, mlp):
    missing = tmp_path / "missing.so"
    assert str(missing) in user_error(tessera.load, missing)
    text = tmp_path / "notes.so"
    text.write_text("not a library\n")
    assert str(text) in user_error(tessera.load, text)
    model, _ = mlp
    assert "-1" in user_error(model.set_num_threads, -1)
