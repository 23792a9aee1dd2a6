"""The encoder as an ensemble in one run (members > 1, bag_dim > 0): each member learns on its
own loss, and the prediction is the weighted mean of the members' probabilities."""
import json

import pytest

from conftest import run_cli

VOCAB, CLASSES = 50, 3


def build(**settings):
    import torch

    from zoo.train.model import TaskSpec
    from zoo.plugins.encoder import EncoderConfig
    from zoo.plugins.encoder.model import build as build_encoder

    torch.manual_seed(0)
    cfg = EncoderConfig(n_layer=1, n_head=2, n_embd=16, block_size=12, dropout=0.0, **settings)
    return build_encoder(cfg, TaskSpec("classification", VOCAB, num_classes=CLASSES)), cfg


def batch():
    import torch

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, VOCAB, (6, 10), generator=g)
    mask = torch.ones_like(ids)
    mask[:2, 7:] = 0  # two padded texts
    return ids, mask, torch.tensor([0, 1, 2, 0, 1, 2])


def test_cross_entropy_scores_every_member_against_the_same_target():
    import torch
    import torch.nn.functional as F

    from zoo.train.losses import cross_entropy

    logits = torch.randn(4, 3, 5)  # [B, M, C]
    targets = torch.tensor([0, 4, 2, 1])
    each = [F.cross_entropy(logits[:, m], targets) for m in range(3)]
    assert cross_entropy(logits, targets, "mean").item() == pytest.approx(
        sum(each).item() / 3, rel=1e-6)
    assert cross_entropy(logits[:, 0], targets, "mean").item() == pytest.approx(each[0].item())


def test_each_member_learns_as_if_alone():
    """The gradient reaching member m is the gradient it would get trained alone on the batch
    (divided by the number of members, which Adam's step does not see)."""
    from zoo.train.losses import cross_entropy

    ensemble, _ = build(members=2, bag_dim=8, bag_buckets=13)
    ids, mask, y = batch()
    ensemble.train()
    out = ensemble(ids, mask)
    assert tuple(out.shape) == (6, 3, CLASSES)
    cross_entropy(out, y, "mean").backward()
    for m, net in enumerate([*ensemble.members, ensemble.bag]):
        together = [p.grad.clone() for p in net.parameters()]
        ensemble.zero_grad()
        cross_entropy(net(ids, mask), y, "mean").backward()
        for shared, alone in zip(together, [p.grad for p in net.parameters()]):
            assert shared.mul(3).allclose(alone, rtol=1e-4, atol=1e-6), f"member {m}"
        ensemble.zero_grad()
        out = ensemble(ids, mask)
        cross_entropy(out, y, "mean").backward()


def test_prediction_is_the_weighted_mean_of_member_probabilities():
    import torch

    ensemble, cfg = build(members=3, bag_dim=8, bag_buckets=13, bag_weight=0.4)
    ids, mask, _ = batch()
    ensemble.eval()
    with torch.no_grad():
        probs = [net(ids, mask).softmax(-1) for net in [*ensemble.members, ensemble.bag]]
        expected = 0.2 * (probs[0] + probs[1] + probs[2]) + 0.4 * probs[3]
        got = ensemble(ids, mask).exp()
    assert got.shape == (6, CLASSES)
    assert got.allclose(expected, atol=1e-6)
    assert not got.allclose(sum(probs) / 4, atol=1e-3)  # the bag's weight is not 1/4


def test_bag_member_takes_steps_scale_times_larger():
    """The bag member is the fasttext network with bag_lr_scale times its stored weights, and
    one Adam step moves stored weights by the learning rate (those with a gradient: the head
    starts at zero, as in fastText, so the first step reaches only the head). So the
    network's weights move bag_lr_scale times the learning rate."""
    import torch

    from zoo.train.losses import cross_entropy
    from zoo.train.model import TaskSpec
    from zoo.plugins.fasttext import FastTextConfig
    from zoo.plugins.fasttext.model import FastText

    ensemble, cfg = build(members=1, bag_dim=8, bag_buckets=13, bag_lr_scale=10.0)
    ids, mask, y = batch()
    bag = ensemble.bag
    before = bag.net.head.weight.detach().clone() * bag.scale
    opt = torch.optim.Adam(ensemble.parameters(), lr=1e-3)
    ensemble.train()
    cross_entropy(ensemble(ids, mask), y, "mean").backward()
    opt.step()
    moved = (bag.net.head.weight.detach() * bag.scale - before).abs()
    assert moved.max().item() == pytest.approx(10 * 1e-3, rel=0.01)

    plain = FastText(FastTextConfig(dim=8, buckets=13, block_size=12),
                     TaskSpec("classification", VOCAB, num_classes=CLASSES))
    plain.load_state_dict({name: 10.0 * value for name, value in bag.net.state_dict().items()})
    with torch.no_grad():
        assert bag(ids, mask).allclose(plain(ids, mask), rtol=1e-5, atol=1e-6)


def test_one_member_is_the_plain_encoder_with_its_parameter_names():
    single, _ = build()
    assert type(single).__name__ == "Encoder"
    assert "tok_emb.weight" in dict(single.named_parameters())
    ensemble, _ = build(members=2)
    names = dict(ensemble.named_parameters())
    assert "members.1.tok_emb.weight" in names and "bag.net.emb.weight" not in names


def test_an_ensemble_for_next_item_is_a_clear_error(one_thread):
    result = run_cli("run", "encoder-char", "digits", "--task", "next-item", "--steps", "1",
                     "--set", "members=2")
    assert result.code == 2, result
    assert "classification only" in result.err
    assert "Traceback" not in result.err


def test_bad_ensemble_settings_fail_before_training():
    for setting in ("members=0", "bag_dim=-1", "bag_weight=1.0", "bag_lr_scale=0"):
        result = run_cli("run", "encoder-bpe", "rotten_tomatoes", "--set", setting)
        assert result.code == 2, (setting, result)
        assert setting.split("=")[0] in result.err


def test_the_default_classifier_preset_trains_an_ensemble_end_to_end(tmp_path, one_thread):
    """encoder-wordpunct: an encoder, an LSTM and a naive Bayes member fitted before training
    on words and their characters, with shares fitted on validation, through the pipeline."""
    csv = tmp_path / "reviews.csv"
    csv.write_text("text,label\n" + "".join(f"a good film {i},pos\na bad film {i},neg\n"
                                            for i in range(40)))
    result = run_cli("run", "encoder-wordpunct", csv, "--steps", "4", "--json", "--quiet")
    assert result.code == 0, result
    run = json.loads(result.out)
    assert run["tokenizer"] == "wordpunct" and run["architecture"] == "encoder"
    from zoo.records.reload import load_trained

    names = load_trained(run["run_id"]).model.state_dict()
    assert {name.split(".")[0] for name in names} == {"members", "nb", "weights"}
    assert {name.split(".")[1] for name in names if name.startswith("members.")} == {"0", "1"}
    assert "members.0.blocks.0.attn.qkv.weight" in names  # the encoder
    assert "members.1.lstm.weight_hh_l1_reverse" in names  # the LSTM, two layers each way
    assert names["weights"].shape == (3,)  # the fitted shares
    assert {name for name in names if name.startswith("nb.")} == {"nb.coef", "nb.intercept"}


def test_naive_bayes_member_counts_each_feature_once_per_text():
    """prepare() sets the log-count ratios of NBSVM: for feature f and class c,
    log(p_c[f] / |p_c|) - log(q_c[f] / |q_c|), p_c = 1 + texts of class c holding f,
    q_c = 1 + texts of the other classes holding f; 0 for a feature no text holds. The bias
    starts at the log class prior."""
    import torch

    ensemble, _ = build(members=1, nb_weight=0.3, nb_buckets=7)
    ids = torch.tensor([[5, 5, 6, 0], [5, 7, 0, 0], [6, 6, 6, 0]])  # 0 is the padding
    mask = (ids != 0).long()
    y = torch.tensor([0, 1, 1])
    ensemble.prepare(ids, mask, y)
    nb = ensemble.nb
    # Features: tokens 5, 6, 7 and the bigrams (5, 5), (5, 6), (5, 7), (6, 6).
    held = torch.zeros(VOCAB + 7, CLASSES)
    for row, label in zip(nb.features(ids, mask), y):
        for feature in set(row.tolist()) - {0}:
            held[feature, label] += 1
    assert held[5].tolist() == [1, 1, 0] and held[6].tolist() == [1, 1, 0]  # once per text
    ours = held + 1
    rest = held.sum(1, keepdim=True) - held + 1
    expected = (ours / ours.sum(0)).log() - (rest / rest.sum(0)).log()
    expected[held.sum(1) == 0] = 0.0
    assert nb.ratios.allclose(expected, atol=1e-6)
    assert nb.ratios[3].abs().sum() == 0 and nb.ratios[5].abs().sum() > 0
    prior = torch.tensor([2.0, 3.0, 1.0]) / 6  # add-one class counts
    assert (nb.bias * nb.scale).allclose(prior.log(), atol=1e-6)


def test_naive_bayes_member_starts_as_naive_bayes_and_joins_the_weighted_mean():
    import torch

    ensemble, _ = build(members=2, bag_dim=8, bag_buckets=13, bag_weight=0.3, nb_weight=0.3,
                        nb_buckets=7)
    ids, mask, y = batch()
    ensemble.prepare(ids, mask, y)
    nb = ensemble.nb
    features = nb.features(ids, mask)
    count = (features != 0).sum(1, keepdim=True).float()
    naive = torch.stack([nb.ratios[row[row != 0]].sum(0) for row in features]) / count.sqrt()
    ensemble.eval()
    with torch.no_grad():
        assert nb(ids, mask).allclose(naive + nb.bias * nb.scale, atol=1e-5)
        probs = [net(ids, mask).softmax(-1) for net in [*ensemble.members, ensemble.bag, nb]]
        expected = 0.2 * (probs[0] + probs[1]) + 0.3 * probs[2] + 0.3 * probs[3]
        assert ensemble(ids, mask).exp().allclose(expected, atol=1e-6)
    assert {"nb.delta", "nb.bias"} <= dict(ensemble.named_parameters()).keys()
    assert "nb.ratios" in ensemble.state_dict()  # saved with the weights


def test_bad_naive_bayes_settings_fail_before_training():
    for settings in (["nb_weight=1.0"], ["nb_weight=-0.1"], ["nb_buckets=0"], ["nb_lr_scale=0"],
                     ["bag_dim=8", "bag_weight=0.5", "nb_weight=0.5"]):
        args = [part for setting in settings for part in ("--set", setting)]
        result = run_cli("run", "encoder-bpe", "rotten_tomatoes", *args)
        assert result.code == 2, (settings, result)
        assert "nb_" in result.err


@pytest.mark.parametrize("fitted", [False, True], ids=["learned-with-the-encoders", "fitted"])
def test_the_pipeline_shows_the_naive_bayes_member_the_training_split(tmp_path, one_thread,
                                                                      fitted):
    """The classification pipeline calls prepare() before training; what the member learns
    there is saved with the weights, so the reloaded run scores the test split as the run
    did."""
    csv = tmp_path / "reviews.csv"
    csv.write_text("text,label\n" + "".join(f"a good film {i},pos\na bad film {i},neg\n"
                                            for i in range(40)))
    member = ["nb_c=1", "nb_char_buckets=4096"] if fitted else ["nb_c=0", "nb_char_buckets=0"]
    result = run_cli("run", "encoder-wordpunct", csv, "--steps", "4", "--json", "--quiet",
                     *[part for setting in ["nb_weight=0.3", "nb_buckets=101", *member]
                       for part in ("--set", setting)])
    assert result.code == 0, result
    run = json.loads(result.out)
    from zoo.records.reload import load_trained

    state = load_trained(run["run_id"]).model.state_dict()
    if fitted:
        assert (state["nb.coef"] != 0).any() and "nb.ratios" not in state
    else:
        ratios = state["nb.ratios"]
        assert (ratios != 0).any()
        assert (ratios[:, 0] == -ratios[:, 1]).all()  # two classes: each the other's mirror
    again = run_cli("eval", run["run_id"], csv, "--split", "test", "--json")
    assert again.code == 0, again
    assert json.loads(again.out)["metrics"]["test_accuracy"] == pytest.approx(
        run["metrics"]["test_accuracy"])
    assert json.loads(again.out)["metrics"]["test_loss"] == pytest.approx(
        run["metrics"]["test_loss"])
