#!/usr/bin/python3
"""Exports torchvision models with seeded random weights to ONNX for the model benchmarks:
models/exported/<name>/model.onnx (batch 1, fp32 input 1x3x224x224, opset 13, static shapes)
and test_data_set_0/input_0.npy (seeded random input) and output_0.npy (torch's output for it),
so that `tessera run` can be checked against torch. Random weights (weights=None) after
torch.manual_seed; batch-norm statistics and affine parameters are drawn too (else they are the
identity, and a wrong batch-norm folding would go unnoticed). Idempotent: a model already
exported is skipped (an export is written to a temporary folder and moved into place).

Usage: /usr/bin/python3 scripts/export_torchvision.py [NAME ...] [--out DIR]
  NAME   mobilenet_v2, squeezenet1_1 (default: both)
  --out  the folder of the exported models (default <repo>/models/exported)
Needs Debian's python3-torch, python3-torchvision and python3-onnx: installs them with apt-get
when they are missing (root).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

PACKAGES = ["python3-torch", "python3-torchvision", "python3-onnx"]
MODELS = {"mobilenet_v2": "mobilenet_v2", "squeezenet1_1": "squeezenet1_1"}
SEED = 20240
OPSET = 13


def import_or_install():
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        if os.environ.get("TESSERA_EXPORT_INSTALLED"):
            sys.exit(f"error: {e} even after installing {' '.join(PACKAGES)}")
        if os.geteuid() != 0:
            sys.exit(f"error: {e}: installing {' '.join(PACKAGES)} needs root")
        print(f"export_torchvision: installing {' '.join(PACKAGES)}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + PACKAGES,
                       check=True, env=env, stdout=subprocess.DEVNULL)
        os.environ["TESSERA_EXPORT_INSTALLED"] = "1"
        os.execv(sys.executable, [sys.executable] + sys.argv)


def export(name, out_dir):
    import numpy as np
    import onnx
    import torch
    import torchvision

    final = os.path.join(out_dir, name)
    if os.path.isfile(os.path.join(final, "test_data_set_0", "output_0.npy")):
        print(f"export_torchvision: {final} exists, skipped", file=sys.stderr)
        return
    torch.manual_seed(SEED)
    model = getattr(torchvision.models, MODELS[name])(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
    model.eval()
    x = torch.from_numpy(np.random.default_rng(SEED).standard_normal((1, 3, 224, 224)).astype(np.float32))
    with torch.no_grad():
        y = model(x)

    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", dir=out_dir)
    try:
        path = os.path.join(tmp, "model.onnx")
        torch.onnx.export(model, x, path, opset_version=OPSET, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
        onnx.checker.check_model(onnx.load(path))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        os.makedirs(os.path.join(tmp, "test_data_set_0"))
        np.save(os.path.join(tmp, "test_data_set_0", "input_0.npy"), x.numpy())
        np.save(os.path.join(tmp, "test_data_set_0", "output_0.npy"), y.numpy())
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"export_torchvision: {final}/model.onnx (torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}, opset {OPSET}, output {tuple(y.shape)})", file=sys.stderr)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", metavar="NAME")
    ap.add_argument("--out", default=os.path.join(root, "models", "exported"))
    a = ap.parse_args()
    for name in a.names:
        if name not in MODELS:
            sys.exit(f"error: unknown model '{name}' (known: {', '.join(MODELS)})")
    import_or_install()
    for name in a.names or list(MODELS):
        export(name, a.out)


if __name__ == "__main__":
    sys.exit(main())
