"""How Model.run takes its inputs: dense arrays in place, strided ones copied once, other
objects converted; never modified. Copies are observed with tracemalloc, which sees numpy's data
allocations."""

import tracemalloc

import numpy as np
import pytest

import tessera
from conftest import assert_outputs_match, data_sets, feeds_of


def peak_allocation(fn):
    """Bytes allocated at the peak of fn(), as tracemalloc traces them, and fn's result."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def mobilenet(built):
    model = tessera.load(built("mobilenet_tiny"))
    folder = data_sets("mobilenet_tiny")[0]
    x = feeds_of(model, folder)["input"]
    assert x.flags.c_contiguous and x.nbytes == 3 * 128 * 128 * 4
    return model, folder, x


def test_dense_input_is_read_in_place(mobilenet):
    model, folder, x = mobilenet
    model.run({"input": x})  # first-call allocations out of the way
    peak, out = peak_allocation(lambda: model.run({"input": x}))
    assert_outputs_match(model, out, folder)
    # The outputs (400 bytes of probs) and their dict; a copy of x would be 196608 bytes.
    assert peak < x.nbytes // 10, peak


def test_strided_input_is_copied_once_and_gives_the_same_result(mobilenet):
    model, folder, x = mobilenet
    for strided in (np.asfortranarray(x), np.repeat(x, 2, axis=3)[..., ::2]):
        assert not strided.flags.c_contiguous
        np.testing.assert_array_equal(strided, x)
        peak, out = peak_allocation(lambda: model.run({"input": strided}))
        assert_outputs_match(model, out, folder)
        assert x.nbytes <= peak < 2 * x.nbytes, peak


def test_read_only_input_is_not_modified(mobilenet):
    model, folder, x = mobilenet
    frozen = x.copy()
    frozen.flags.writeable = False
    out = model.run({"input": frozen})
    assert_outputs_match(model, out, folder)
    np.testing.assert_array_equal(frozen, x)


def test_outputs_are_new_arrays_each_run(mobilenet):
    model, folder, x = mobilenet
    first, second = model.run({"input": x}), model.run({"input": x})
    a, b = first["probs"], second["probs"]
    assert a.flags.c_contiguous and a.flags.owndata and a.flags.writeable
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, b)


def test_a_list_is_converted_to_the_input_dtype(built):
    model = tessera.load(built("mlp"))
    folder = data_sets("mlp")[0]
    x = feeds_of(model, folder)["input"]
    assert_outputs_match(model, model.run({"input": x.tolist()}), folder)
