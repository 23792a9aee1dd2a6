"""Parity of the built-in torch models with their code at an earlier commit (before
zoo.train.layers, by default): for the same seed, the same state-dict names, bit-identical weights,
outputs (eval, and train with dropout) and gradients, over a grid of small configs.

    python benchmarks/check_layers_parity.py [--rev cde8f1f]

The earlier model modules are read with `git show REV:plugins/NAME/model.py` into a
temporary folder and imported from there; nothing in the tree changes.
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, header  # noqa: E402


def old_module(rev: str, name: str, folder: Path):
    source = subprocess.run(["git", "show", f"{rev}:plugins/{name}/model.py"], cwd=REPO,
                            check=True, capture_output=True, text=True).stdout
    path = folder / f"old_{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def same(old, new, cfg, spec, masked: bool) -> None:
    import torch

    torch.manual_seed(1)
    a = old.build(cfg, spec)
    torch.manual_seed(1)
    b = new.build(cfg, spec)
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb), (list(sa), list(sb))
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key
    ids = torch.randint(3, spec.vocab_size, (3, 8))
    mask = torch.ones(3, 8, dtype=torch.long)
    mask[1, 5:] = 0
    mask[2, 3:] = 0
    for training in (False, True):
        a.train(training)
        b.train(training)
        torch.manual_seed(2)
        ya = a(ids, mask if masked else None)
        torch.manual_seed(2)
        yb = b(ids, mask if masked else None)
        assert torch.equal(ya, yb), (training, (ya - yb).abs().max())
        if training:
            ya.float().pow(2).mean().backward()
            yb.float().pow(2).mean().backward()
            for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
                assert (pa.grad is None) == (pb.grad is None), name
                assert pa.grad is None or torch.equal(pa.grad, pb.grad), name


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="cde8f1f", help="the commit to compare with")
    args = parser.parse_args(argv)

    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.decoder import DecoderConfig
    from zoo.plugins.decoder import model as decoder
    from zoo.plugins.digits import DigitsConfig
    from zoo.plugins.digits import model as digits
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder import model as encoder

    header(f"model parity with {args.rev}")
    checked = 0
    with tempfile.TemporaryDirectory() as folder:
        old = {name: old_module(args.rev, name, Path(folder))
               for name in ("decoder", "encoder", "digits")}
        grid = itertools.product(("language-modeling", "classification", "next-item"),
                                 (True, False), (True, False), ("tanh", "exact"), (0.0, 0.2))
        for task, bias, tie, gelu, dropout in grid:
            spec = TaskSpec(task, 20, 4 if task == "classification" else None)
            same(old["decoder"], decoder, DecoderConfig(
                n_layer=2, n_head=2, n_embd=16, block_size=8, dropout=dropout, bias=bias,
                tie_weights=tie, gelu=gelu), spec, task != "language-modeling")
            checked += 1
            if task != "language-modeling":
                for pooling in ("cls", "mean"):
                    cfg = EncoderConfig(n_layer=2, n_head=2, n_embd=16, block_size=8,
                                        dropout=dropout, bias=bias, tie_weights=tie,
                                        pooling=pooling, mlp_ratio=3)
                    same(old["encoder"], encoder, cfg, spec, True)
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        same(old["encoder"], encoder, cfg, spec, True)
                    checked += 2
            if task == "next-item" and gelu == "tanh" and tie:
                for heads in (1, 2):
                    cfg = DigitsConfig(width=16, blocks=2, heads=heads, dropout=dropout,
                                       block_size=8)
                    same(old["digits"], digits, cfg, spec, True)
                    same(old["digits"], digits, cfg, spec, False)
                    checked += 2
    print(f"identical to {args.rev}: state-dict names, weights, outputs (eval, and train with "
          f"dropout) and gradients, in {checked} model configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
