"""Small programs the serving tests and the load benchmark serve: exported on the CPU with
dynamic batch dimensions, so Triton can batch them."""

from __future__ import annotations

from pathlib import Path

IN_FEATURES, HIDDEN, OUT_FEATURES = 16, 32, 8
MAX_BATCH = 64
VOCAB, IDS = 50, 4


def mlp(width_in: int = IN_FEATURES, hidden: int = HIDDEN, width_out: int = OUT_FEATURES, layers: int = 1):
    import torch

    torch.manual_seed(0)
    mods = [torch.nn.Linear(width_in, hidden), torch.nn.ReLU()]
    for _ in range(layers - 1):
        mods += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    mods.append(torch.nn.Linear(hidden, width_out))
    return torch.nn.Sequential(*mods).eval()


def export_mlp(path: Path, model=None, width_in: int = IN_FEATURES, max_batch: int = MAX_BATCH):
    """Exports `model` (default: mlp()) with a dynamic batch dimension 1..max_batch to `path`;
    returns the eager model."""
    import torch

    import kiln

    model = model if model is not None else mlp()
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    ep = torch.export.export(model, (torch.randn(4, width_in),), dynamic_shapes=({0: batch},))
    kiln.export(ep, backend="cpu", verbose=False).save(str(path))
    return model


def package_mlp_pt2(path: Path, model=None, max_batch: int = MAX_BATCH):
    """Compiles `model` (default: mlp()) into a stock AOTInductor .pt2 package at `path`, the way
    a user of torch._inductor.aoti_compile_and_package would (without libtorch, weights in a
    separate blob), with a dynamic batch dimension 1..max_batch; returns the eager model."""
    import torch

    model = model if model is not None else mlp()
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    ep = torch.export.export(model, (torch.randn(4, IN_FEATURES),), dynamic_shapes=({0: batch},))
    torch._inductor.aoti_compile_and_package(ep, package_path=str(path), inductor_configs={
        "aot_inductor.link_libtorch": False,
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "binary_blob",
    })
    return model


class TwoInOut:
    """A model of two inputs (float32 features, int64 token ids) and two outputs."""

    @staticmethod
    def build():
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(IN_FEATURES, OUT_FEATURES)
                self.emb = torch.nn.Embedding(VOCAB, OUT_FEATURES)

            def forward(self, features, ids):
                h = self.lin(features)
                e = self.emb(ids).sum(1)
                return h + e, (h * e).sum(-1).to(torch.float64)

        torch.manual_seed(1)
        return Model().eval()

    @staticmethod
    def export(path: Path):
        import torch

        import kiln

        model = TwoInOut.build()
        batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
        example = (torch.randn(4, IN_FEATURES), torch.randint(0, VOCAB, (4, IDS)))
        ep = torch.export.export(model, example, dynamic_shapes=({0: batch}, {0: batch}))
        kiln.export(ep, backend="cpu", verbose=False).save(str(path))
        return model
