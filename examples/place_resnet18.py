"""A torchvision ResNet-18 placed with devplace.torch.place_module and
trained for a few steps with a plain SGD loop; prints each stage's time.

    PYTHONPATH=build/python /usr/bin/python3 examples/place_resnet18.py --steps 10
"""
import argparse
import time

import torch
import torchvision

import devplace.torch

parser = argparse.ArgumentParser()
parser.add_argument("--cluster", default="k80x2")
parser.add_argument("--method", default="m_etf")
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--image", type=int, default=64, help="height and width of the input images")
args = parser.parse_args()

torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10)
x = torch.randn(args.batch, 3, args.image, args.image)
y = torch.randint(0, 10, (args.batch,))

placed = devplace.torch.place_module(model, (x,), args.cluster, target=y, method=args.method)
devices = sorted({str(d) for d in placed.devplace_device_map.values()})
print(f"placed {placed.devplace_graph.num_ops} ops with {args.method} on {args.cluster}: devices {', '.join(devices)}, "
      f"simulated step {placed.devplace_step_time_s:.6f} s")
parallel = placed.devplace_parallel
print("runs each device on a thread of its own: " + (
    f"{len(placed.devplace_executor.stages)} stages" if parallel is True else f"no ({parallel})"))

optimizer = torch.optim.SGD(placed.parameters(), lr=0.01, momentum=0.9)
start = time.perf_counter()
for step in range(args.steps):
    optimizer.zero_grad()
    out = placed(x)
    loss = torch.nn.functional.cross_entropy(out, y.to(out.device))
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss), f"step {step}: loss {loss.item()}"
train_s = time.perf_counter() - start
seconds = placed.devplace_seconds
print(f"trace {seconds['trace']:.2f} s, place {seconds['place']:.2f} s, train {args.steps} steps {train_s:.2f} s; "
      f"last loss {loss.item():.4f}")
