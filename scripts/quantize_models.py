#!/usr/bin/env python3
"""Makes int8 QDQ versions of fp32 models with ONNX Runtime's static quantization, for checking
quantized inference against the peers (scripts/quant_check.py): QuantizeLinear/DequantizeLinear
pairs around every quantized operator (QDQ format), u8 activations, s8 weights per output
channel, activation ranges calibrated (min/max) on seeded random inputs fed through ONNX
Runtime. The model is pre-processed first (ONNX Runtime's quant_pre_process: shape inference and
basic graph optimizations, which let more operators be quantized), without its symbolic shape
inference when that fails (it needs sympy; static shapes do without), and when that fails too the
model is quantized as it is; the progress line says which.

Writes, per model, into OUT/<name>/:
  model.onnx       the QDQ model
  input_<k>.npy    k = 0, 1, 2: test inputs (seeded random, other draws than the calibration's)
  ref_<k>.npy      the original fp32 model's output on input_<k> (ONNX Runtime, graph
                   optimizations off)
  meta.json        source model, input and output names, the input distribution, calibration
Everything is written to a temporary folder and moved into place, so a folder with model.onnx
is complete; a model whose folder exists is skipped unless --force.

Inputs: 4-D (image) inputs are drawn from the standard normal distribution, as the image models'
test data; other inputs from a normal distribution with the mean and standard deviation of the
model's own test_data_set_*/input_<i>.npy (bert_emb_op13's embeddings: about N(0.007, 1.0)),
standard normal when it has none. Only models with one float input and one output.

Usage: <peers' python> scripts/quantize_models.py [--models "NAME ..."] [--calib N] [--out DIR]
                                                  [--threads N] [--force]
  --models LIST  models of ../shared/models, exported torchvision models (mobilenet_v2,
                 squeezenet1_1: models/exported/NAME, exported first when missing, with
                 /usr/bin/python3 scripts/export_torchvision.py), or folders holding a
                 model.onnx (default "resnet18 mobilenet_v2 bert_emb_op13")
  --calib N      calibration inputs per model (default 8)
  --out DIR      output folder (default <repo>/models/quantized)
  --threads N    ONNX Runtime intra-op threads for calibration and the references (default 1:
                 keeps a shared machine responsive; eight inputs take seconds per model)
  --force        quantize again models whose output exists
The peers' python is the last line of scripts/setup_peers.sh's output.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

import peer_common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = "resnet18 mobilenet_v2 bert_emb_op13"
EXPORTED = ("mobilenet_v2", "squeezenet1_1")  # what scripts/export_torchvision.py makes
CALIB_SEED = 11   # calibration draws
TEST_SEED = 23    # test input draws: a different stream, so the test inputs were not calibrated on
TEST_INPUTS = 3


def shared_models_dir():
    """The shared models beside the repository (../shared/models), else the machine's copy."""
    beside = os.path.normpath(os.path.join(ROOT, "..", "shared", "models"))
    return beside if os.path.isdir(beside) else "/work/shared/models"


def resolve(name):
    """(name, path of model.onnx) for a --models word; exports missing torchvision models."""
    if os.path.isfile(os.path.join(name, "model.onnx")):
        return os.path.basename(os.path.normpath(name)), os.path.join(name, "model.onnx")
    shared = os.path.join(shared_models_dir(), name, "model.onnx")
    if os.path.isfile(shared):
        return name, shared
    if name in EXPORTED:
        out = os.path.join(ROOT, "models", "exported")
        path = os.path.join(out, name, "model.onnx")
        if not os.path.isfile(path):
            # Debian's torch lives in the system python, not in the peers' environment.
            p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "export_torchvision.py"),
                                "--out", out, name], stdout=sys.stderr)
            if p.returncode != 0 or not os.path.isfile(path):
                sys.exit(f"error: exporting {name} failed (see above)")
        return name, path
    sys.exit(f"error: no model '{name}' (neither a folder with model.onnx, a model of "
             f"{shared_models_dir()}, nor one of {', '.join(EXPORTED)})")


def session(path, threads, level):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def input_distribution(model_path, shape):
    """(mean, std) of the model's input: standard normal for images, as their test data; else
    the statistics of the model's own test data, so that the calibrated ranges fit the inputs
    it is checked on (standard normal when it has none)."""
    if len(shape) == 4:
        return 0.0, 1.0
    files = sorted(glob.glob(os.path.join(os.path.dirname(model_path), "test_data_set_*", "input_0.npy")))
    if not files:
        return 0.0, 1.0
    data = np.concatenate([np.load(f).astype(np.float64).ravel() for f in files])
    return float(data.mean()), float(data.std())


def draws(seed, count, shape, mean, std):
    rng = np.random.default_rng(seed)
    return [(mean + std * rng.standard_normal(shape)).astype(np.float32) for _ in range(count)]


class Feeds(CalibrationDataReader):
    """The calibration inputs, one feed dict per get_next, then None."""

    def __init__(self, name, arrays):
        self.it = iter([{name: a} for a in arrays])

    def get_next(self):
        return next(self.it, None)


class ThreadLimit:
    """Within it, every ONNX Runtime session starts with `threads` intra-op threads: the
    calibrator and the pre-processor make their own SessionOptions, which would take every core."""

    def __init__(self, threads):
        self.threads = threads

    def __enter__(self):
        threads = self.threads
        self.saved = ort.SessionOptions

        class Limited(self.saved):
            def __init__(self):
                super().__init__()
                self.intra_op_num_threads = threads
        ort.SessionOptions = Limited

    def __exit__(self, *exc):
        ort.SessionOptions = self.saved


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def pre_process(name, src, dst):
    """(model to quantize, how it was pre-processed). Symbolic shape inference needs sympy, which
    the peers' environment may lack; the models here have static shapes, so ONNX's own shape
    inference does as well. Pre-processing only widens what gets quantized: on failure the
    model is quantized as it is."""
    errors = []
    for how, skip_symbolic in (("full", False), ("without symbolic shape inference", True)):
        try:
            quant_pre_process(src, dst, skip_symbolic_shape=skip_symbolic)
            return dst, how
        except Exception as e:  # any failure of the optional step
            errors.append(first_line(e))
    print(f"quantize_models: {name}: pre-processing failed ({errors[-1]}), quantizing the model as it is",
          file=sys.stderr)
    return src, "none"


def quantize(name, src, out_dir, calib, threads):
    model = onnx.load(src, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1 or len(model.graph.output) != 1:
        sys.exit(f"error: {name}: {len(inputs)} inputs and {len(model.graph.output)} outputs; "
                 "only models with one input and one output are supported")
    inp = inputs[0]
    if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        sys.exit(f"error: {name}: input '{inp.name}' is not float32")
    # Symbolic or unknown dimensions as 1, as the model benchmarks feed them (batch 1).
    shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
             for d in inp.type.tensor_type.shape.dim]
    mean, std = input_distribution(src, shape)

    os.makedirs(os.path.dirname(os.path.abspath(out_dir)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", dir=os.path.dirname(os.path.abspath(out_dir)))
    try:
        pre = os.path.join(tmp, "pre.onnx")
        with ThreadLimit(threads):
            source, pre_processed = pre_process(name, src, pre)
            quantize_static(source, os.path.join(tmp, "model.onnx"),
                            Feeds(inp.name, draws(CALIB_SEED, calib, shape, mean, std)),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            calibrate_method=CalibrationMethod.MinMax)
        if os.path.exists(pre):
            os.remove(pre)
        for stray in glob.glob(os.path.join(tmp, "*")):  # the calibrator's augmented model, if left
            if os.path.basename(stray) != "model.onnx":
                shutil.rmtree(stray) if os.path.isdir(stray) else os.remove(stray)

        ref = session(src, threads, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        for k, x in enumerate(draws(TEST_SEED, TEST_INPUTS, shape, mean, std)):
            np.save(os.path.join(tmp, f"input_{k}.npy"), x)
            np.save(os.path.join(tmp, f"ref_{k}.npy"), ref.run(None, {inp.name: x})[0])

        q = onnx.load(os.path.join(tmp, "model.onnx"), load_external_data=False)
        ops = [n.op_type for n in q.graph.node]
        meta = {"name": name, "source": os.path.abspath(src), "input": inp.name, "input_shape": shape,
                "output": model.graph.output[0].name, "input_mean": mean, "input_std": std,
                "calibration": {"inputs": calib, "seed": CALIB_SEED, "method": "MinMax"},
                "test_seed": TEST_SEED, "pre_processed": pre_processed,
                "format": "QDQ, activations u8 per tensor, weights s8 per channel",
                "onnxruntime": ort.__version__,
                "quantize_linear": ops.count("QuantizeLinear"),
                "dequantize_linear": ops.count("DequantizeLinear")}
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        shutil.rmtree(out_dir, ignore_errors=True)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def main():
    ap = peer_common.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=DEFAULT_MODELS, metavar="LIST")
    ap.add_argument("--calib", type=int, default=8, metavar="N")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "quantized"), metavar="DIR")
    ap.add_argument("--threads", type=int, default=1, metavar="N")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    if a.calib < 1:
        sys.exit(f"error: --calib wants at least 1 input, not {a.calib}")
    if a.threads < 1:
        sys.exit(f"error: --threads wants at least 1, not {a.threads}")
    names = a.models.split()
    if not names:
        sys.exit("error: --models wants at least one model")
    resolved = [resolve(n) for n in names]  # every model found before anything is quantized
    ort.set_default_logger_severity(3)  # the quantizer's sessions warn about every unfused node
    for name, src in resolved:
        out_dir = os.path.join(a.out, name)
        if os.path.isfile(os.path.join(out_dir, "model.onnx")) and not a.force:
            print(f"quantize_models: {name}: {out_dir} exists, skipped (--force to redo)")
            continue
        m = quantize(name, src, out_dir, a.calib, a.threads)
        print(f"quantize_models: {name}: {out_dir}/model.onnx ({m['quantize_linear']} QuantizeLinear, "
              f"{m['dequantize_linear']} DequantizeLinear; {a.calib} calibration inputs "
              f"N({m['input_mean']:.3g}, {m['input_std']:.3g}^2); "
              f"pre-processing: {m['pre_processed']})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
