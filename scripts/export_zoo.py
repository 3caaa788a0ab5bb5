#!/usr/bin/env python3
"""Exports a zoo of well-known architectures to ONNX with ONNX Runtime reference outputs, for
scripts/zoo_check.py (every model built by tessera and compared with ONNX Runtime).

Each model is built from its constructor or config with seeded random weights (nothing is
downloaded): torchvision classification, segmentation and detection models (weights=None),
transformers models from small configs (2 layers, hidden 64-128), and three small networks
written here (a U-Net, a YOLO-style detector). Batch-norm statistics and affine parameters and
layer-norm affine parameters are drawn too (else they are the identity, and a wrong folding
would go unnoticed). Each model is written to <out>/<name>/:

  model.onnx                    batch 1, fp32, static shapes; opset 13 (vision) or 17 (text,
                                speech, the transformers ViT)
  test_data_set_0/input_<i>.npy seeded random inputs (token ids are int64)
  test_data_set_0/output_<i>.npy ONNX Runtime's outputs on them (CPU, graph optimizations off)
  meta.json                     what the model is, its op histogram, and the tolerance a check
                                uses: rtol 1e-4, atol 1e-5, unless ONNX Runtime's outputs already
                                differ by more from torch's, or from torch's in float64 (measured
                                here: torch_vs_ort_max_abs, float64_vs_ort_max_abs), when atol is
                                raised to twice what the larger difference needs

The small models (SMALL: a few hundred kB each) go to models/zoo_small (committed, and checked
by ctest: tests/compile/zoo_small_test.cpp); the others to models/zoo (ignored by git).
Idempotent: a model already exported is skipped unless --force (an export is written to a
temporary folder and moved into place).

Usage: python scripts/export_zoo.py [NAME ...] [--force] [--list] [--out DIR] [--small-out DIR]
Needs torch and torchvision (Debian's python3-torch 1.13, python3-torchvision 0.14),
transformers 4.36, onnx and onnxruntime: scripts/zoo_check.sh makes a virtual environment with
them (scripts/setup_zoo.sh) and runs this with it.
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 20251202
RTOL, ATOL = 1e-4, 1e-5
VISION_OPSET, TEXT_OPSET = 13, 17
SMALL = ["unet", "yolo", "bert", "gpt2", "whisper_encoder"]


# ---- the models ---------------------------------------------------------------------------------
# Each builder returns (module, [(input name, array)], [output names], description); the module's
# forward takes the inputs as tensors in that order and returns a tensor or a tuple of them.

def image(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


def tokens(rng, vocab, seq):
    return rng.integers(1, vocab, size=(1, seq), dtype=np.int64)


def padded_mask(seq, pad):
    """1 for the first seq - pad tokens, 0 for the padding after them."""
    m = np.ones((1, seq), dtype=np.int64)
    m[:, seq - pad:] = 0
    return m


def torchvision_classifier(ctor, size=224, kaiming=False, **kw):
    """kaiming: redraw the conv weights He-normal (fan in), for a model whose own init makes
    activations grow layer by layer (inception_v3's truncated normal of std 0.1 reaches 1e14)."""
    def build(rng):
        import torch
        import torchvision
        model = getattr(torchvision.models, ctor)(weights=None, **kw)
        note = ""
        with torch.no_grad():  # vit_b_16 zeroes its classifier: a check of zeros checks nothing
            for m in model.modules():
                if isinstance(m, torch.nn.Linear) and not m.weight.any():
                    torch.nn.init.normal_(m.weight, std=m.in_features ** -0.5)
                    if m.bias is not None:
                        torch.nn.init.normal_(m.bias, std=0.1)
                    note = ", zero-initialized classifier redrawn"
        if kaiming:
            with torch.no_grad():
                for m in model.modules():
                    if isinstance(m, torch.nn.Conv2d):
                        torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            note += ", conv weights He-normal"
        return (model, [("input", image(rng, (1, 3, size, size)))], ["logits"],
                f"torchvision.models.{ctor}(weights=None{''.join(f', {k}={v!r}' for k, v in kw.items())})"
                f"{note}, input 1x3x{size}x{size}")
    return build


class FirstOutput:
    """Wraps a module whose forward returns a dict: returns its entry `key`."""

    @staticmethod
    def make(model, key):
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)[key]
        return Wrap()


def torchvision_segmentation(ctor, size):
    def build(rng):
        import torchvision
        model = getattr(torchvision.models.segmentation, ctor)(weights=None, weights_backbone=None)
        return (FirstOutput.make(model, "out"), [("input", image(rng, (1, 3, size, size)))], ["out"],
                f"torchvision.models.segmentation.{ctor}(weights=None, weights_backbone=None) "
                f"['out'], input 1x3x{size}x{size}")
    return build


def ssdlite(rng):
    import torch
    import torchvision

    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)

    class BackboneHead(torch.nn.Module):
        """The network of the detector without its data-dependent pre- and post-processing
        (resizing, anchor decoding, score thresholds, NMS): backbone features into the head."""

        def __init__(self):
            super().__init__()
            self.backbone = model.backbone
            self.head = model.head

        def forward(self, x):
            features = list(self.backbone(x).values())
            out = self.head(features)
            return out["bbox_regression"], out["cls_logits"]

    return (BackboneHead(), [("input", image(rng, (1, 3, 320, 320)))], ["bbox_regression", "cls_logits"],
            "torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, "
            "weights_backbone=None): backbone + head (no transform, anchors or NMS), input 1x3x320x320")


def vit_torchvision(rng):
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=128,
                              mlp_dim=256, num_classes=100)
    import torch
    torch.nn.init.normal_(model.heads.head.weight, std=0.1)  # torchvision zeroes the head
    torch.nn.init.normal_(model.heads.head.bias, std=0.1)
    return (model, [("input", image(rng, (1, 3, 64, 64)))], ["logits"],
            "torchvision VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, "
            "hidden_dim=128, mlp_dim=256, num_classes=100) (vit_b_16's class, small config)")


def conv_bn_act(cin, cout, k=3, s=1):
    import torch.nn as nn
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


def unet(rng):
    import torch
    import torch.nn as nn

    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, widths=(8, 16, 32, 64), classes=2):
            super().__init__()
            self.down = nn.ModuleList()
            cin = 3
            for w in widths:
                self.down.append(double(cin, w))
                cin = w
            self.pool = nn.MaxPool2d(2)
            self.up = nn.ModuleList()
            self.dec = nn.ModuleList()
            for w in reversed(widths[:-1]):
                self.up.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
                self.dec.append(double(2 * w, w))
                cin = w
            self.head = nn.Conv2d(cin, classes, 1)

        def forward(self, x):
            skips = []
            for i, block in enumerate(self.down):
                x = block(x)
                if i + 1 < len(self.down):
                    skips.append(x)
                    x = self.pool(x)
            for up, dec in zip(self.up, self.dec):
                x = dec(torch.cat([up(x), skips.pop()], dim=1))
            return self.head(x)

    return (UNet(), [("input", image(rng, (1, 3, 64, 64)))], ["mask"],
            "U-Net (widths 8-16-32-64, Conv-BN-ReLU pairs, MaxPool down, ConvTranspose 2x2 s2 up, "
            "skip Concat, 1x1 head to 2 classes), input 1x3x64x64")


def yolo(rng):
    import torch
    import torch.nn as nn

    class C2(nn.Module):
        """Split into two halves, a bottleneck on one, concat: the CSP block of YOLOv5/v8."""

        def __init__(self, c):
            super().__init__()
            self.cv1 = conv_bn_act(c, c, 1)
            self.m = nn.Sequential(conv_bn_act(c // 2, c // 2), conv_bn_act(c // 2, c // 2))
            self.cv2 = conv_bn_act(c + c // 2, c, 1)

        def forward(self, x):
            a, b = self.cv1(x).chunk(2, 1)
            return self.cv2(torch.cat([a, b, b + self.m(b)], 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1 = conv_bn_act(c, c // 2, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)
            self.cv2 = conv_bn_act(c * 2, c, 1)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class Yolo(nn.Module):
        def __init__(self, size=128, classes=4, anchors=3):
            super().__init__()
            w = (8, 16, 32, 64)
            self.stem = nn.Sequential(conv_bn_act(3, w[0], 3, 2), conv_bn_act(w[0], w[1], 3, 2), C2(w[1]))
            self.p3 = nn.Sequential(conv_bn_act(w[1], w[2], 3, 2), C2(w[2]))           # stride 8
            self.p4 = nn.Sequential(conv_bn_act(w[2], w[3], 3, 2), C2(w[3]), SPPF(w[3]))  # stride 16
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.n3 = nn.Sequential(conv_bn_act(w[3] + w[2], w[2], 1), C2(w[2]))
            self.down = conv_bn_act(w[2], w[2], 3, 2)
            self.n4 = nn.Sequential(conv_bn_act(w[2] + w[3], w[3], 1), C2(w[3]))
            self.no = classes + 5
            self.na = anchors
            self.detect = nn.ModuleList([nn.Conv2d(w[2], anchors * self.no, 1), nn.Conv2d(w[3], anchors * self.no, 1)])
            self.strides = (8, 16)
            anchor_wh = torch.tensor([[[10, 13], [16, 30], [33, 23]], [[30, 61], [62, 45], [59, 119]]],
                                     dtype=torch.float32)
            for i, s in enumerate(self.strides):
                n = size // s
                gy, gx = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
                self.register_buffer(f"grid{i}", torch.stack((gx, gy), 2).view(1, 1, n, n, 2).float())
                self.register_buffer(f"anchor{i}", anchor_wh[i].view(1, anchors, 1, 1, 2))

        def forward(self, x):
            x = self.stem(x)
            p3 = self.p3(x)
            p4 = self.p4(p3)
            n3 = self.n3(torch.cat([self.up(p4), p3], 1))
            n4 = self.n4(torch.cat([self.down(n3), p4], 1))
            out = []
            for i, (f, conv) in enumerate(zip((n3, n4), self.detect)):
                y = conv(f)
                n = y.shape[-1]
                y = y.view(1, self.na, self.no, n, n).permute(0, 1, 3, 4, 2).sigmoid()
                xy = (y[..., 0:2] * 2 - 0.5 + getattr(self, f"grid{i}")) * self.strides[i]
                wh = (y[..., 2:4] * 2) ** 2 * getattr(self, f"anchor{i}")
                out.append(torch.cat([xy, wh, y[..., 4:]], -1).view(1, -1, self.no))
            return torch.cat(out, 1)

    return (Yolo(), [("input", image(rng, (1, 3, 128, 128)))], ["detections"],
            "YOLO-style detector (Conv-BN-SiLU, CSP split/concat blocks, SPPF, nearest 2x Upsample "
            "neck, two-scale head with sigmoid and YOLOv5 box decoding), input 1x3x128x128, "
            "output 1x(3*(16*16+8*8))x9")


# transformers: small configs, eager attention (torch 1.13 has no scaled_dot_product_attention).

class TupleOutputs:
    @staticmethod
    def make(model, names, **call_kw):
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):
                out = self.model(*args, return_dict=False, **call_kw)
                return tuple(out[: len(names)])
        return Wrap()


def bert(rng):
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64)
    seq = 16
    return (TupleOutputs.make(BertModel(cfg), ["last_hidden_state", "pooler_output"]),
            [("input_ids", tokens(rng, 512, seq)), ("attention_mask", padded_mask(seq, 3))],
            ["last_hidden_state", "pooler_output"],
            "transformers BertModel(BertConfig(vocab 512, hidden 64, 2 layers, 4 heads, "
            "intermediate 128)), 16 tokens, the last 3 masked")


def distilbert(rng):
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=1000, dim=128, n_layers=2, n_heads=4, hidden_dim=256,
                           max_position_embeddings=128)
    seq = 32
    return (TupleOutputs.make(DistilBertModel(cfg), ["last_hidden_state"]),
            [("input_ids", tokens(rng, 1000, seq)), ("attention_mask", padded_mask(seq, 5))],
            ["last_hidden_state"],
            "transformers DistilBertModel(DistilBertConfig(vocab 1000, dim 128, 2 layers, 4 heads, "
            "hidden 256)), 32 tokens, the last 5 masked")


def roberta(rng):
    from transformers import RobertaConfig, RobertaModel
    cfg = RobertaConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=256, max_position_embeddings=130)
    seq = 32
    return (TupleOutputs.make(RobertaModel(cfg), ["last_hidden_state", "pooler_output"]),
            [("input_ids", tokens(rng, 1000, seq)), ("attention_mask", padded_mask(seq, 0))],
            ["last_hidden_state", "pooler_output"],
            "transformers RobertaModel(RobertaConfig(vocab 1000, hidden 128, 2 layers, 4 heads, "
            "intermediate 256)), 32 tokens")


def gpt2(rng):
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4)
    return (TupleOutputs.make(GPT2Model(cfg), ["last_hidden_state"], use_cache=False),
            [("input_ids", tokens(rng, 512, 16))], ["last_hidden_state"],
            "transformers GPT2Model(GPT2Config(vocab 512, n_embd 64, 2 layers, 4 heads)), "
            "16 tokens, no cache")


def t5_encoder(rng):
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256, num_layers=2, num_heads=4,
                   relative_attention_num_buckets=32, feed_forward_proj="gated-gelu")
    seq = 32
    return (TupleOutputs.make(T5EncoderModel(cfg), ["last_hidden_state"]),
            [("input_ids", tokens(rng, 1000, seq)), ("attention_mask", padded_mask(seq, 4))],
            ["last_hidden_state"],
            "transformers T5EncoderModel(T5Config(vocab 1000, d_model 128, d_kv 32, d_ff 256, "
            "2 layers, 4 heads, gated-gelu)), 32 tokens, the last 4 masked")


def vit(rng):
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(image_size=64, patch_size=8, num_channels=3, hidden_size=128, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=256)
    return (TupleOutputs.make(ViTModel(cfg), ["last_hidden_state", "pooler_output"]),
            [("pixel_values", image(rng, (1, 3, 64, 64)))], ["last_hidden_state", "pooler_output"],
            "transformers ViTModel(ViTConfig(image 64, patch 8, hidden 128, 2 layers, 4 heads, "
            "intermediate 256))")


def whisper_encoder(rng):
    from transformers import WhisperConfig, WhisperModel
    cfg = WhisperConfig(vocab_size=512, num_mel_bins=80, encoder_layers=2, encoder_attention_heads=4,
                        decoder_layers=1, decoder_attention_heads=4, d_model=64, encoder_ffn_dim=256,
                        decoder_ffn_dim=256, max_source_positions=100, max_target_positions=64,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    encoder = WhisperModel(cfg).get_encoder()
    return (TupleOutputs.make(encoder, ["last_hidden_state"]),
            [("input_features", image(rng, (1, 80, 200)))], ["last_hidden_state"],
            "the encoder of transformers WhisperModel(WhisperConfig(80 mel bins, d_model 64, 2 encoder "
            "layers, 4 heads, ffn 256, 100 source positions)): Conv1d k3 + GELU, Conv1d k3 s2 + GELU, "
            "sinusoidal positions, 2 layers; input 1x80x200")


MODELS = {
    # classification
    "resnet18": (torchvision_classifier("resnet18"), VISION_OPSET),
    "resnet50": (torchvision_classifier("resnet50"), VISION_OPSET),
    "mobilenet_v2": (torchvision_classifier("mobilenet_v2"), VISION_OPSET),
    "mobilenet_v3_small": (torchvision_classifier("mobilenet_v3_small"), VISION_OPSET),
    "efficientnet_b0": (torchvision_classifier("efficientnet_b0"), VISION_OPSET),
    "shufflenet_v2_x0_5": (torchvision_classifier("shufflenet_v2_x0_5"), VISION_OPSET),
    "mnasnet0_5": (torchvision_classifier("mnasnet0_5"), VISION_OPSET),
    "regnet_y_400mf": (torchvision_classifier("regnet_y_400mf"), VISION_OPSET),
    "squeezenet1_1": (torchvision_classifier("squeezenet1_1"), VISION_OPSET),
    "densenet121": (torchvision_classifier("densenet121"), VISION_OPSET),
    "googlenet": (torchvision_classifier("googlenet", aux_logits=False, init_weights=True), VISION_OPSET),
    "inception_v3": (torchvision_classifier("inception_v3", size=299, kaiming=True, aux_logits=False,
                                                           init_weights=True),
                     VISION_OPSET),
    "convnext_tiny": (torchvision_classifier("convnext_tiny"), VISION_OPSET),
    "swin_t": (torchvision_classifier("swin_t"), VISION_OPSET),
    "vit_tv_small": (vit_torchvision, VISION_OPSET),
    "vit_b_16": (torchvision_classifier("vit_b_16"), VISION_OPSET),
    # segmentation
    "deeplabv3_mobilenet_v3_large": (torchvision_segmentation("deeplabv3_mobilenet_v3_large", 224), VISION_OPSET),
    "lraspp_mobilenet_v3_large": (torchvision_segmentation("lraspp_mobilenet_v3_large", 224), VISION_OPSET),
    "fcn_resnet50": (torchvision_segmentation("fcn_resnet50", 128), VISION_OPSET),
    "unet": (unet, VISION_OPSET),
    # detection
    "ssdlite320_mobilenet_v3_large": (ssdlite, VISION_OPSET),
    "yolo": (yolo, VISION_OPSET),
    # transformers
    "bert": (bert, TEXT_OPSET),
    "distilbert": (distilbert, TEXT_OPSET),
    "roberta": (roberta, TEXT_OPSET),
    "gpt2": (gpt2, TEXT_OPSET),
    "t5_encoder": (t5_encoder, TEXT_OPSET),
    "vit": (vit, TEXT_OPSET),
    "whisper_encoder": (whisper_encoder, TEXT_OPSET),
}


# ---- export -------------------------------------------------------------------------------------

def randomize_norms(model):
    """Draws batch-norm statistics and the affine parameters of batch and layer norms."""
    import torch
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
            if isinstance(m, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm,
                              torch.nn.GroupNorm)) and getattr(m, "weight", None) is not None:
                m.weight.uniform_(0.5, 1.5)
                if m.bias is not None:
                    m.bias.normal_(0.0, 0.1)


def float64_outputs(model, args):
    """The model's outputs computed in float64 (a copy of it; float inputs cast), the truth the
    float32 reference's own error is measured against; None when the model does not run so."""
    import copy
    import torch
    try:
        m = copy.deepcopy(model).double()
        with torch.no_grad():
            y = m(*(a.double() if a.is_floating_point() else a for a in args))
        y = [y] if isinstance(y, torch.Tensor) else list(y)
        return [t.numpy().astype(np.float64) for t in y]
    except Exception as e:  # noqa: BLE001
        print(f"export_zoo: no float64 run ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
              file=sys.stderr)
        return None


def ort_outputs(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def needed_atol(got, want, rtol):
    """The smallest atol with |got - want| <= atol + rtol |want| everywhere."""
    d = np.abs(got.astype(np.float64) - want.astype(np.float64)) - rtol * np.abs(want.astype(np.float64))
    return float(max(0.0, np.max(d))) if d.size else 0.0


def round_up(x):
    """x rounded up to one significant digit."""
    e = 10.0 ** math.floor(math.log10(x))
    return float(f"{math.ceil(x / e - 1e-9) * e:.1g}")


def export(name, out_dir, force):
    import onnx
    import onnxruntime
    import torch

    builder, opset = MODELS[name]
    final = os.path.join(out_dir, name)
    if not force and os.path.isfile(os.path.join(final, "meta.json")):
        print(f"export_zoo: {final} exists, skipped", file=sys.stderr)
        return
    t0 = time.time()
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    model, inputs, output_names, description = builder(rng)
    randomize_norms(model)
    model.eval()
    args = tuple(torch.from_numpy(a) for _, a in inputs)
    with torch.no_grad():
        ref = model(*args)
    ref = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    ref = [r.numpy() for r in ref]
    exact = float64_outputs(model, args)

    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", dir=out_dir)
    try:
        path = os.path.join(tmp, "model.onnx")
        # Traced with gradients on: torch 1.13's nn.MultiheadAttention takes its fused fast path
        # (aten::_native_multi_head_attention, which has no ONNX export) only without them.
        torch.onnx.export(model, args, path, opset_version=opset,
                          input_names=[n for n, _ in inputs], output_names=output_names,
                          do_constant_folding=True)
        m = onnx.load(path)
        onnx.checker.check_model(m)
        feeds = {n: a for n, a in inputs}
        outs = ort_outputs(path, feeds)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        data = os.path.join(tmp, "test_data_set_0")
        os.makedirs(data)
        for i, (_, a) in enumerate(inputs):
            np.save(os.path.join(data, f"input_{i}.npy"), a)
        worst, worst64, atol = 0.0, None, ATOL
        for i, (o, r) in enumerate(zip(outs, ref)):
            np.save(os.path.join(data, f"output_{i}.npy"), o)
            worst = max(worst, float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64)))))
            atol = max(atol, 2 * needed_atol(o, r, RTOL))
            if exact is not None:
                worst64 = max(worst64 or 0.0, float(np.max(np.abs(o.astype(np.float64) - exact[i]))))
                atol = max(atol, 2 * needed_atol(o, exact[i], RTOL))
        atol = round_up(atol) if atol > ATOL else ATOL
        meta = {
            "name": name,
            "description": description,
            "generator": "scripts/export_zoo.py",
            "seed": SEED,
            "opset": opset,
            "inputs": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in inputs},
            "outputs": {n: {"shape": list(o.shape), "dtype": str(o.dtype)} for n, o in zip(output_names, outs)},
            "nodes": len(m.graph.node),
            "ops": dict(sorted(Counter(n.op_type for n in m.graph.node).items())),
            "reference": f"ONNX Runtime {onnxruntime.__version__}, CPU, graph optimizations off",
            "torch": torch.__version__,
            "torch_vs_ort_max_abs": worst,
            "float64_vs_ort_max_abs": worst64,
            "rtol": RTOL,
            "atol": atol,
        }
        if atol > ATOL:
            meta["tolerance_note"] = (
                f"ONNX Runtime's outputs differ from torch's by up to {worst:.3g} and from torch's in "
                f"float64 by up to {worst64 if worst64 is None else f'{worst64:.3g}'}, beyond rtol "
                f"{RTOL}, atol {ATOL}: atol is twice what the larger difference needs")
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"export_zoo: {final}/model.onnx ({len(m.graph.node)} nodes, opset {opset}, "
          f"torch vs ORT {worst:.2g}, float64 vs ORT {worst64 if worst64 is None else f'{worst64:.2g}'}, atol {atol:g}, {time.time() - t0:.1f} s)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", metavar="NAME")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "zoo"), help="folder of the zoo")
    ap.add_argument("--small-out", default=os.path.join(ROOT, "models", "zoo_small"),
                    help="folder of the small models (committed)")
    ap.add_argument("--force", action="store_true", help="export again models already exported")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument("--keep-going", action="store_true", help="report a failed export and go on")
    a = ap.parse_args()
    if a.list:
        print("\n".join(f"{n}{' (small)' if n in SMALL else ''}" for n in MODELS))
        return 0
    for name in a.names:
        if name not in MODELS:
            sys.exit(f"error: unknown model '{name}' (known: {', '.join(MODELS)})")
    import torch
    torch.set_num_threads(1)
    failed = []
    for name in a.names or list(MODELS):
        try:
            export(name, a.small_out if name in SMALL else a.out, a.force)
        except Exception as e:  # noqa: BLE001
            if not a.keep_going:
                raise
            print(f"export_zoo: {name} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                  file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"export_zoo: {len(failed)} exports failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
