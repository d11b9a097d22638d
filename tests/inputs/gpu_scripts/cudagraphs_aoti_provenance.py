"""CUDA-graph and AOT scenarios for pt2logs fixtures (issue 35). One scenario per process."""

import os
import sys

import torch

which = sys.argv[1]
dev = "cuda"

if which == "mutated":
    # an input mutated inside the compiled region: cudagraph trees skip it
    @torch.compile(mode="reduce-overhead")
    def f(x, buf):
        buf.add_(1)
        return x.sin() + buf

    x = torch.randn(64, device=dev)
    b = torch.zeros(64, device=dev)
    for _ in range(3):
        f(x, b)
elif which == "cpu":
    # a CPU tensor among the inputs: skipped for "cpu device"
    @torch.compile(mode="reduce-overhead")
    def g(x, c):
        return x.cos() * 2, c + 1

    x = torch.randn(64, device=dev)
    c = torch.randn(4)
    for _ in range(3):
        g(x, c)
elif which == "dynamic":
    # dynamic sizes under reduce-overhead: one CUDA graph recorded per distinct size (warns past 50)
    @torch.compile(mode="reduce-overhead", dynamic=True)
    def h(x):
        return (x * 3).relu().sum(0)

    for n in range(2, 60):
        for _ in range(2):
            h(torch.randn(n, 8, device=dev))
elif which == "aoti":
    # export + AOTInductor on CUDA
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(16, 16)

        def forward(self, x):
            return torch.nn.functional.gelu(self.l(x))

    m = M().to(dev)
    ep = torch.export.export(m, (torch.randn(4, 16, device=dev),))
    path = torch._inductor.aoti_compile_and_package(
        ep, package_path=os.path.join(os.environ["WORK"], "m.pt2")
    )
    runner = torch._inductor.aoti_load_package(path)
    print(runner(torch.randn(4, 16, device=dev)).shape)
elif which == "provenance":
    torch._inductor.config.trace.provenance_tracking_level = 1

    @torch.compile
    def p(x, w):
        y = x @ w
        return torch.nn.functional.silu(y) + y.mean()

    p(torch.randn(32, 32, device=dev), torch.randn(32, 32, device=dev))
print("done", which, torch.__version__, torch.cuda.get_device_name())
