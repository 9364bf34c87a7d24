#!/usr/bin/python3
"""Exports the test models of devplace's ONNX importer from torchvision.

Run with Debian's python3 (python3-torch, python3-torchvision):

    /usr/bin/python3 tools/make_test_models.py --out DIR

writes DIR/resnet50.onnx (batch 1, 224x224), DIR/inception_v3.onnx
(batch 1, 299x299), DIR/transformer.onnx (a small nn.Transformer) and
DIR/expected.json with each model's exact parameter count as PyTorch counts
it. Weights are random: the importer needs shapes, not values. Models
already in DIR are kept, so ctest runs it cheaply as a fixture. Without
torch it writes nothing and exits 0; the tests that need the models skip.
"""
import argparse
import json
import os
import sys


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def export(torch, model, args, path, input_names, dynamic_axes=None):
    model.eval()
    # Distinct values in every weight: the exporter merges initializers that
    # are equal (every freshly made BatchNorm's ones and zeros), which would
    # make parameters look shared.
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if tensor.is_floating_point():
                tensor.uniform_(0.5, 1.5)
    # PRESERVE rather than EVAL: EVAL folds BatchNorm into the convolutions,
    # which changes the parameters the importer should find.
    torch.onnx.export(model, args, path, input_names=input_names, opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True,
                      dynamic_axes=dynamic_axes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the .onnx files and expected.json")
    options = parser.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as error:
        print(f"make_test_models: skipped, {error} (install python3-torch python3-torchvision)")
        return 0
    os.makedirs(options.out, exist_ok=True)
    expected_path = os.path.join(options.out, "expected.json")
    expected = {}
    if os.path.exists(expected_path):
        with open(expected_path) as f:
            expected = json.load(f)
    torch.manual_seed(0)

    def build_resnet50():
        model = torchvision.models.resnet50()
        return model, (torch.randn(1, 3, 224, 224),), ["image"], None

    def build_inception_v3():
        # No auxiliary head: it runs only in training, so an exported
        # inference graph would not hold its parameters.
        model = torchvision.models.inception_v3(aux_logits=False, init_weights=False)
        return model, (torch.randn(1, 3, 299, 299),), ["image"], None

    def build_transformer():
        model = torch.nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                     dim_feedforward=128, dropout=0.0)
        # Sequence lengths stay symbolic, to exercise --dim.
        axes = {"src": {0: "src_len"}, "tgt": {0: "tgt_len"}}
        return model, (torch.randn(10, 2, 64), torch.randn(7, 2, 64)), ["src", "tgt"], axes

    builders = {"resnet50": build_resnet50, "inception_v3": build_inception_v3, "transformer": build_transformer}
    for name, build in builders.items():
        path = os.path.join(options.out, name + ".onnx")
        if os.path.exists(path) and name in expected:
            continue
        model, args, input_names, axes = build()
        export(torch, model, args, path + ".tmp", input_names, axes)
        os.replace(path + ".tmp", path)
        expected[name] = {"parameters": parameter_count(model)}
        print(f"make_test_models: wrote {path}, {expected[name]['parameters']} parameters")
        with open(expected_path + ".tmp", "w") as f:
            json.dump(expected, f, indent=2)
        os.replace(expected_path + ".tmp", expected_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
