"""tessera: ONNX models compiled into one shared library each, run from Python.

    import numpy as np
    import tessera

    lib = tessera.build("model.onnx", db="tune_logs/tessera.db")   # -> "model.so"
    model = tessera.load(lib)
    outputs = model.run({"input": np.zeros((1, 784), np.float32)})  # name -> numpy array

build() is `tessera build` (tuning records from a database, else default schedules), load()
opens a built library through its C API (include/tessera/runtime/tessera_model.h). Errors are
tessera.UserError (bad input: a missing file, a wrong shape) or tessera.InternalError (a bug in
tessera), both tessera.Error, with the one-line message the `tessera` command prints.
"""

import operator
import os
from pathlib import Path
from typing import Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "Error",
    "UserError",
    "InternalError",
    "TensorInfo",
    "Model",
    "build",
    "load",
]


class Error(Exception):
    """Any error tessera raises; its message is one line."""


class UserError(Error):
    """Bad input: an unreadable model or library, an unknown option value, a missing input, a
    wrong dtype or shape. The message names the offending value."""


class InternalError(Error):
    """A broken invariant inside tessera: a bug, never the caller's fault."""


from . import _tessera  # noqa: E402  (the module raises the classes above)

_tessera._register_errors(UserError, InternalError)

PathLike = Union[str, "os.PathLike[str]"]

# TesseraDType codes (tessera_model.h) -> numpy dtypes. numpy has no bfloat16 and no narrow
# types; ml_dtypes (when installed) has them, else they are raw bytes ("V2", "V1"), as tessera's
# .npy files hold them.
_NUMPY_DTYPES = {
    1: np.dtype(np.float32),
    2: np.dtype(np.float64),
    3: np.dtype(np.int32),
    4: np.dtype(np.int64),
    5: np.dtype(np.bool_),
    6: np.dtype(np.float16),
    7: np.dtype(np.int8),
    8: np.dtype(np.uint8),
    9: np.dtype(np.int16),
    10: np.dtype(np.uint16),
    11: np.dtype(np.uint32),
    12: np.dtype(np.uint64),
}
_ML_DTYPES = {
    13: ("bfloat16", "V2"),
    14: ("float8_e4m3fn", "V1"),
    15: ("float8_e4m3fnuz", "V1"),
    16: ("float8_e5m2", "V1"),
    17: ("float8_e5m2fnuz", "V1"),
    18: ("float4_e2m1fn", "V1"),
    19: ("int4", "V1"),
    20: ("uint4", "V1"),
    21: ("int2", "V1"),
    22: ("uint2", "V1"),
}


def _numpy_dtype(code: int) -> np.dtype:
    """The numpy dtype holding elements of TesseraDType `code`."""
    if code in _NUMPY_DTYPES:
        return _NUMPY_DTYPES[code]
    if code not in _ML_DTYPES:
        raise UserError(f"the model library has a tensor of unknown dtype code {code}")
    name, raw = _ML_DTYPES[code]
    try:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError):
        return np.dtype(raw)


class TensorInfo(NamedTuple):
    """An input or output of a model: its name, numpy dtype and shape."""

    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]


class Model:
    """A built model library loaded into this process (tessera.load), with one instance of its
    model: its weights bound and its intermediate memory allocated.

    Runs on one thread at a time (concurrent calls of run wait for each other; they release the
    GIL while the model computes). Load the library twice for parallel runs.
    """

    def __init__(self, path: PathLike):
        self._model = _tessera.Model(os.fspath(path), _numpy_dtype)
        self._inputs = [TensorInfo(*t) for t in self._model.inputs]
        self._outputs = [TensorInfo(*t) for t in self._model.outputs]

    @property
    def name(self) -> str:
        """The name the model was built from (the ONNX file's stem, or its folder's name when
        the file is model.onnx)."""
        return self._model.name

    @property
    def target(self) -> str:
        """What the library runs on: "cpu" or "cuda"."""
        return self._model.target

    @property
    def path(self) -> str:
        """The library's path, as given to load()."""
        return self._model.path

    @property
    def inputs(self) -> "list[TensorInfo]":
        """The inputs, in the model's order."""
        return list(self._inputs)

    @property
    def outputs(self) -> "list[TensorInfo]":
        """The outputs, in the model's order."""
        return list(self._outputs)

    def set_num_threads(self, n: int) -> None:
        """Threads of the model's parallel loops, the calling thread included; 0 (the default)
        means one per physical core. Takes effect at the next run."""
        self._model.set_num_threads(n)

    def run(self, inputs: Mapping[str, object]) -> Dict[str, np.ndarray]:
        """Runs the model and returns its outputs, a dict name -> new numpy array.

        `inputs` maps every input's name to an array of the input's dtype and shape. A numpy
        array that is C-contiguous is read in place; a strided one (a slice, a transpose) is
        copied into a dense array first; another object (a list, a scalar) is converted with
        numpy.asarray to the input's dtype. A numpy array of another dtype is refused, not
        converted. Raises UserError naming the tensor for a missing or unknown name, a wrong
        dtype or shape, or when the model's run fails.
        """
        return self._model.run(inputs)

    def __repr__(self) -> str:
        def text(ts):
            return ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in ts)

        return (
            f"<tessera.Model {self.name!r} ({self.target}) "
            f"inputs [{text(self._inputs)}] outputs [{text(self._outputs)}]>"
        )


def build(
    model: PathLike,
    output: Optional[PathLike] = None,
    *,
    db: Optional[PathLike] = None,
    target: str = "llvm",
    precision: str = "fp32",
    opt_level: int = 3,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> str:
    """Builds the ONNX file `model` into a shared library and returns its path, as
    `tessera build` does (without printing the coverage table).

    output: the library to write (replaced); default the model's file stem + ".so" in the
        current folder.
    db: a tuning database (tessera tune's, e.g. "tune_logs/tessera.db") whose best records for
        this machine and target the tasks take; None: every task gets its default schedule.
    target: what the library runs on, as `tessera build --target` takes it: "llvm" (this
        CPU), "llvm -mcpu=skylake-avx512" (another CPU; "-mtriple=aarch64-linux-gnu" cross-
        compiles), "cuda" (an NVIDIA GPU: GPU 0's architecture, else sm_90; building needs
        none) or "cuda -arch=sm_80".
    precision: what matrix products compute on: "fp32", "bf16" or, with cuda, "tf32".
    opt_level: graph optimization level 0..3.
    input_shapes: static shapes for inputs with symbolic dimensions, name -> dims.

    The build releases the GIL. Raises UserError naming the value for an unreadable model, a
    missing database, an unwritable output or an unknown option value.
    """
    model = os.fspath(model)
    output = os.fspath(output) if output is not None else Path(model).stem + ".so"
    shapes = {str(k): [operator.index(d) for d in dims] for k, dims in (input_shapes or {}).items()}
    return _tessera.build(
        model,
        output,
        None if db is None else os.fspath(db),
        target,
        precision,
        operator.index(opt_level),
        shapes,
    )


def load(path: PathLike) -> Model:
    """Loads the model library at `path` (made by build() or `tessera build`) and creates an
    instance of its model. Raises UserError naming the path when the file is missing, is not a
    tessera model library, was built for another machine or by another model ABI version."""
    return Model(path)
