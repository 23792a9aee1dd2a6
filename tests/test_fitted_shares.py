"""fit_shares: the encoder ensemble's shares of the averaged probabilities, fitted on the
validation split (plugins/encoder/shares.py), saved with the weights and used on reload."""
import json

import pytest

from conftest import run_cli


def probs(*rows):
    import torch

    return torch.tensor(rows, dtype=torch.float32)  # [N, G, K]


def test_the_grid_is_every_split_into_tenths():
    import torch

    from zoo.plugins.encoder.shares import share_grid

    grid = share_grid(3)
    assert grid.shape == (66, 3)  # C(12, 2)
    torch.testing.assert_close(grid.sum(dim=1), torch.ones(66))
    assert torch.equal((grid * 10).round(), grid * 10)
    assert len({tuple(row.tolist()) for row in grid}) == 66


def test_a_mix_that_answers_more_rows_beats_either_group_alone():
    import torch

    from zoo.plugins.encoder.shares import fit_shares

    # class 0 is right everywhere; each group alone answers two of the three rows
    group_probs = probs([[0.9, 0.1], [0.4, 0.6]],
                        [[0.9, 0.1], [0.9, 0.1]],
                        [[0.4, 0.6], [1.0, 0.0]])
    shares = fit_shares(group_probs, torch.tensor([0, 0, 0]))
    assert 0.2 - 1e-6 <= shares[1] <= 0.7 + 1e-6, shares  # where all three are right
    assert abs(float(shares.sum()) - 1.0) < 1e-6


def test_right_answers_first_then_the_lower_log_loss():
    import torch

    from zoo.plugins.encoder.shares import fit_shares

    targets = torch.tensor([0, 1])
    always_wrong = probs([[0.9, 0.1], [0.1, 0.9]], [[0.2, 0.8], [0.8, 0.2]])  # the second wrong
    assert fit_shares(always_wrong, targets).tolist() == [1.0, 0.0]
    both_right = probs([[0.6, 0.4], [0.9, 0.1]], [[0.4, 0.6], [0.1, 0.9]])  # the second surer
    assert fit_shares(both_right, targets).tolist() == [0.0, 1.0]


def test_fitted_shares_are_saved_and_a_reload_scores_as_the_run_did(negated_reviews, tmp_path):
    from safetensors.numpy import load_file

    result = run_cli("run", "encoder-wordpunct", negated_reviews, "--steps", 40, "--json",
                     "--set", "n_embd=16", "--set", "lstm_hidden=8", "--set", "batch_size=8",
                     "--set", "eval_interval=10", "--set", "members=1", "--set", "lstm_members=1",
                     "--set", "nb_weight=0.45", "--set", "fit_shares=true")
    assert result.code == 0, result
    run = json.loads(result.out)
    saved = tmp_path / "home" / "runs" / run["run_id"] / "model.safetensors"
    weights = load_file(str(saved))["weights"]
    assert weights.shape == (3,) and abs(weights.sum() - 1.0) < 1e-6
    assert all(abs(w * 10 - round(w * 10)) < 1e-6 for w in weights), weights  # fitted: tenths
    reloaded = run_cli("eval", run["run_id"], negated_reviews, "--json")
    assert reloaded.code == 0, reloaded
    metrics = json.loads(reloaded.out)["metrics"]
    assert metrics["test_accuracy"] == run["metrics"]["test_accuracy"]
    assert metrics["test_loss"] == pytest.approx(run["metrics"]["test_loss"], rel=1e-6)


def test_shares_stay_exact_tenths_under_bf16_autocast():
    """The fit runs in float32 even where the members compute in bf16 (as the engine
    evaluates on this CPU): bf16 would store 0.1 as 0.10009766."""
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build

    torch.manual_seed(0)
    cfg = EncoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=12, members=1,
                        lstm_members=1, lstm_hidden=8, nb_weight=0.3, fit_shares=True)
    model = build(cfg, TaskSpec("classification", 50, num_classes=3)).eval()
    ids = torch.randint(3, 50, (64, 10))
    fitted = set()
    for seed in range(4):
        targets = torch.randint(0, 3, (64,), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            model.calibrate(ids, torch.ones_like(ids), targets)
        assert model.weights.dtype == torch.float32
        assert all(abs(w * 10 - round(w * 10)) < 1e-6 for w in model.weights.tolist())
        fitted.add(tuple(model.weights.tolist()))
    assert len(fitted) > 1 and any(w not in (0.0, 0.5, 1.0) for row in fitted for w in row)


def test_calibrate_fits_on_each_text_in_its_own_row_whatever_the_padding():
    """calibrate scores the split in batches of similar length, each cut to its longest
    text; the shares are those fitted to every text's probabilities in the split's order,
    padded to any width."""
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build
    from zoo.plugins.encoder.shares import fit_shares

    torch.manual_seed(0)
    cfg = EncoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=16, members=1,
                        lstm_members=1, lstm_hidden=8, nb_weight=0.3, fit_shares=True)
    model = build(cfg, TaskSpec("classification", 50, num_classes=3)).eval()
    lengths = torch.randint(1, 12, (40,))
    mask = (torch.arange(16) < lengths.unsqueeze(1)).long()  # right padding to 16
    ids = torch.randint(3, 50, (40, 16)) * mask
    for seed in range(6):
        targets = torch.randint(0, 3, (40,), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = fit_shares(torch.einsum("nmk,mg->ngk",
                                               model.member_probabilities(ids, mask),
                                               model.grouping), targets)
            model.calibrate(ids, mask, targets, batch_size=7)
        assert torch.equal(model.weights, model.grouping @ expected), seed
