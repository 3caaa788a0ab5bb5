"""tessera: ONNX models compiled into one shared library each, run from Python.

    import numpy as np
    import tessera

    tessera.tune("model.onnx", trials=200, db="tune_logs/tessera.db")  # -> TuneSummary
    lib = tessera.build("model.onnx", db="tune_logs/tessera.db")   # -> "model.so"
    model = tessera.load(lib)
    outputs = model.run({"input": np.zeros((1, 784), np.float32)})  # name -> numpy array

tune() is `tessera tune MODEL` (schedules searched and measured on this machine, every
measurement committed to a tuning database), build() is `tessera build` (tuning records from a
database, else default schedules), load() opens a built library through its C API
(include/tessera/runtime/tessera_model.h). Errors are tessera.UserError (bad input: a missing
file, a wrong shape) or tessera.InternalError (a bug in tessera), both tessera.Error, with the
one-line message the `tessera` command prints.
"""

import operator
import os
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "Error",
    "UserError",
    "InternalError",
    "TensorInfo",
    "Model",
    "BuiltLibrary",
    "TaskCoverage",
    "TuneProgress",
    "TaskTuning",
    "TuneSummary",
    "build",
    "load",
    "tune",
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

# What the package carries beside the extension module (python/CMakeLists.txt), so that it needs
# nothing from the folder it was built in: the runtime archive model libraries link, and the
# worker process tune() measures candidates in.
_PACKAGE_DIR = Path(_tessera.__file__).parent
_RUNTIME_ARCHIVE = _PACKAGE_DIR / "libtessera_runtime.a"
_MEASURE_WORKER = _PACKAGE_DIR / "tessera-measure-worker"

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


class TaskCoverage(NamedTuple):
    """Where the schedule of one task of a build came from (a row of `tessera build`'s coverage
    table)."""

    task: int
    pattern: str
    workload_key: str
    count: int  # kernel calls of this task per model run
    source: str  # "exact", "isa_class", "compatible" (a tuning record served), or "default"
    record_id: int  # the record served (0 for "default")
    note: str  # for "default": why no record served


class BuiltLibrary(str):
    """The path of a library build() wrote (a str), with the build's coverage: one TaskCoverage
    per task, in task order."""

    coverage: "list[TaskCoverage]"

    def __new__(cls, path: str, coverage: "list[TaskCoverage]"):
        self = super().__new__(cls, path)
        self.coverage = coverage
        return self


def build(
    model: PathLike,
    output: Optional[PathLike] = None,
    *,
    db: Optional[PathLike] = None,
    target: str = "llvm",
    precision: str = "fp32",
    opt_level: int = 3,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> BuiltLibrary:
    """Builds the ONNX file `model` into a shared library and returns its path, as
    `tessera build` does (without printing the coverage table: the returned path, a str, carries
    it as `.coverage`, a list of TaskCoverage).

    output: the library to write (replaced); default the model's file stem + ".so" in the
        current folder.
    db: a tuning database (tune()'s or `tessera tune`'s, e.g. "tune_logs/tessera.db") whose
        best records for this machine and target the tasks take; None: every task gets its
        default schedule.
    target: what the library runs on, as `tessera build --target` takes it: "llvm" (this
        CPU), "llvm -mcpu=skylake-avx512" (another CPU; "-mtriple=aarch64-linux-gnu" cross-
        compiles), "cuda" (an NVIDIA GPU: GPU 0's architecture, else sm_90; building needs
        none) or "cuda -arch=sm_80".
    precision: what matrix products compute on: "fp32", "bf16", "fp16" (CPU: weights stored in
        float16, arithmetic f32) or, with cuda, "tf32".
    opt_level: graph optimization level 0..3.
    input_shapes: static shapes for inputs with symbolic dimensions, name -> dims.

    The build releases the GIL. Raises UserError naming the value for an unreadable model, a
    missing database, an unwritable output or an unknown option value.
    """
    model = os.fspath(model)
    output = os.fspath(output) if output is not None else Path(model).stem + ".so"
    path, coverage = _tessera.build(
        model,
        output,
        None if db is None else os.fspath(db),
        target,
        precision,
        operator.index(opt_level),
        _input_shapes(input_shapes),
        # The package's own runtime archive; without it (a partial copy of the package), the one
        # of the build tessera was made in.
        str(_RUNTIME_ARCHIVE) if _RUNTIME_ARCHIVE.is_file() else "",
    )
    return BuiltLibrary(path, [TaskCoverage(**row) for row in coverage])


def _input_shapes(input_shapes: Optional[Mapping[str, Sequence[int]]]) -> Dict[str, List[int]]:
    return {str(k): [operator.index(d) for d in dims] for k, dims in (input_shapes or {}).items()}


class TuneProgress(NamedTuple):
    """One report of tune()'s task scheduler: at the start (task None), when a round starts on
    a task (round_done False; again after each committed batch of it) and when the round has
    been committed (round_done True)."""

    round: int  # rounds committed so far (the current one not included)
    round_done: bool
    task: Optional[int]  # index of the task being (or just) tuned; None at the start
    task_name: Optional[str]  # its fused pattern, e.g. "conv2d+relu"
    tasks: int  # tasks being tuned
    trials_done: int  # candidates measured so far, all tasks
    trials_total: int  # the trial budget (0: ends by time)
    estimated_ms: Optional[float]  # the model's estimated latency now (None: nothing measured)
    elapsed_secs: float
    eta_secs: float  # estimated time left (0: unknown)


class TaskTuning(NamedTuple):
    """What tune() did for one task."""

    index: int  # the task's index among the model's tasks (as `tessera inspect` lists them)
    workload_key: str
    pattern: str
    count: int  # calls per model run
    flops: float  # of one call
    trials: int  # candidates measured in this run
    rounds: int
    errors: int  # candidates that failed (compile, crash, wrong result)
    best_ms: Optional[float]  # the best record's time in the database (None: none measured)


class TuneSummary(NamedTuple):
    """The outcome of tune() (the fields of `tessera tune --json` that describe the run)."""

    model: str
    db: str
    target: str  # the target its records carry, e.g. "llvm -mcpu=znver4"
    fingerprint: str  # this machine's hardware fingerprint
    seed: int
    trials: int  # candidates measured, all tasks
    rounds: int
    errors: int
    estimated_ms_before: Optional[float]  # end-to-end estimate from the database's records
    estimated_ms_after: Optional[float]  # (sum of count x best; None: not every task measured)
    elapsed_secs: float
    db_records: int  # records in the database afterwards
    pretrained: bool  # the cost models started from the built-in pretrained model
    tasks: "list[TaskTuning]"


def tune(
    model: PathLike,
    *,
    time_budget: Optional[float] = None,
    trials: Optional[int] = None,
    db: PathLike = "tune_logs/tessera.db",
    target: str = "llvm",
    precision: str = "fp32",
    opt_level: int = 3,
    seed: int = 0,
    progress: Optional[Callable[[TuneProgress], None]] = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> TuneSummary:
    """Tunes the tasks of the ONNX file `model` on this machine into the tuning database `db`,
    as `tessera tune MODEL` does, and returns a TuneSummary. build(model, db=db) then serves
    the tasks from the records (build with the same target, precision, opt_level and
    input_shapes: they decide the tasks).

    Candidates are compiled, checked against the reference and timed in a worker process; every
    round's records are committed before the next, so an interrupted run keeps what it measured
    and a rerun resumes.

    time_budget: seconds; alone, the run ends by time only; with trials, at whichever limit
        comes first. None: no time limit.
    trials: candidates to measure, all tasks together; None: 1000 without a time budget.
    db: the tuning database (created, with its folder).
    target: "llvm" (this CPU), "llvm -mcpu=NAME" (another CPU whose code runs here) or "cuda"
        (GPU 0).
    precision, opt_level, input_shapes: as build() takes them.
    seed: seeds the search, the cost models and the measured inputs.
    progress: called with a TuneProgress at every report of the task scheduler, on the calling
        thread. An exception it raises stops tuning at once and propagates (committed rounds
        stay in the database).

    Tuning releases the GIL between reports. Ctrl-C (KeyboardInterrupt, noticed at the next
    report) lets the round in progress commit, then raises KeyboardInterrupt; a second one stops
    at once. Raises UserError with the command's one-line message (naming its option, e.g.
    "--trials must be at least 1, got 0") for a bad option or model.
    """

    seed = operator.index(seed)
    if not 0 <= seed < 2**64:
        raise UserError(f"seed must be in 0..2**64-1, got {seed}")

    def report(fields: dict) -> None:
        progress(TuneProgress(**fields))

    summary = _tessera.tune(
        os.fspath(model),
        os.fspath(db),
        target,
        precision,
        operator.index(opt_level),
        seed,
        None if trials is None else operator.index(trials),
        None if time_budget is None else float(time_budget),
        _input_shapes(input_shapes),
        str(_MEASURE_WORKER),
        None if progress is None else report,
    )
    note = summary.pop("note")
    if note:
        warnings.warn(note, stacklevel=2)
    summary["tasks"] = [TaskTuning(**t) for t in summary["tasks"]]
    return TuneSummary(**summary)


def load(path: PathLike) -> Model:
    """Loads the model library at `path` (made by build() or `tessera build`) and creates an
    instance of its model. Raises UserError naming the path when the file is missing, is not a
    tessera model library, was built for another machine or by another model ABI version."""
    return Model(path)
