"""zoo sweep --seeds auto: more seeds only for the rows still tied with their column's
leader, look by look, the error rate split over the looks (a fake trainer records each
cell's figure, so no model trains)."""

import math

import numpy as np
import pytest
from conftest import run_cli

import zoo
from zoo.comparison.significance import Tie
from zoo.records.store import Store
from zoo.sweeps import driver
from zoo.sweeps.until_answered import look_levels, next_step


def test_the_looks_share_the_error_rate_by_their_degrees_of_freedom():
    levels = look_levels(0.95, 10)
    shares = [1 - level for level in levels]
    assert len(levels) == 9 and sum(shares) == pytest.approx(0.05)  # Bonferroni over looks
    assert shares[0] == pytest.approx(0.05 / 45) and shares[-1] == pytest.approx(0.05 * 9 / 45)
    assert look_levels(0.95, 2) == [pytest.approx(0.95)]  # one look: the table's own level


def test_only_the_leader_and_the_rows_tied_with_it_get_a_seed_within_the_budget():
    tie = Tie("text", "a0 a1", "a", [("b0 b1", "b", "Holm-adjusted p=0.3")])
    step = next_step([tie], {"a0 a1": 3, "b0 b1": 3, "c0 c1": 3}, most=4)
    assert step.more == ["a0 a1", "b0 b1"] and not step.spent  # c, told apart, gets none
    assert "a leads but is not told apart from b (Holm-adjusted p=0.3)" in step.lines[0]
    assert "one more seed for a (to 4), b (to 4)" in step.lines[0]
    spent = next_step([tie], {"a0 a1": 4, "b0 b1": 4}, most=4)
    assert spent.more == [] and "still not told apart from b" in spent.spent[0]


def fake_trainer(means: dict, sd: float):
    """driver.run_sweep for tests: each cell to do is recorded finished at once, its figure
    the model's mean plus a draw of its seed."""

    def run_sweep(sweep, *_, **__):
        with Store() as store:
            for cell in sweep.todo:
                rng = np.random.default_rng([cell.seed, len(cell.model)])
                cell.run_id, cell.status = f"{cell.model}-{cell.seed}", "finished"
                store.insert(
                    cell.run_id,
                    model=cell.model,
                    architecture=cell.model.partition("-")[0],
                    tokenizer="char",
                    dataset=cell.dataset,
                    task="language-modeling",
                    seed=cell.seed,
                    status="finished",
                    kind="train",
                    config_hash=cell.config_hash,
                    config={"configs": {"train": {"steps": 3}}},
                    metrics={"val_bpc": means[cell.model] + sd * rng.standard_normal()},
                    duration=1.0,
                )
        return sweep

    return run_sweep


def auto_sweep(tiny_text, monkeypatch, means, most):
    monkeypatch.setattr(driver, "run_sweep", fake_trainer(means, sd=0.05))
    lines = []

    class Log:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    result = zoo.sweep(
        list(means),
        str(tiny_text),
        seeds="auto",
        max_seeds=most,
        compare=zoo.ComparisonSpec(metric="val_bpc"),
        log=Log(),
    )
    return result, "".join(lines)


def test_a_row_told_apart_gets_no_more_seeds(tiny_text, monkeypatch):
    means = {"decoder-char": 1.0, "decoder-modern": 2.0}
    result, said = auto_sweep(tiny_text, monkeypatch, means, most=6)
    cells = result.comparison.cells.set_index("model")
    # 2 seeds cannot tell them apart at look 1's share (1 df); 3 seeds do at look 2's
    assert cells["n"].to_dict() == {"decoder-char": 3, "decoder-modern": 3}
    assert bool(cells.loc["decoder-char", "best"])
    assert (
        "look 1 of at most 5" in said
        and "one more seed for decoder-char (to 3), decoder-modern (to 3)" in said
    )
    (note,) = [n for n in result.comparison.notes if n.startswith("seeds until answered")]
    assert "2 look(s), the last tested at 99.3%" in note and "Bonferroni" in note


def test_rows_that_stay_tied_stop_at_the_budget(tiny_text, monkeypatch):
    means = {"decoder-char": 1.0, "decoder-modern": 1.0, "decoder-bpe": 3.0}
    result, said = auto_sweep(tiny_text, monkeypatch, means, most=4)
    seeds = result.comparison.cells.set_index("model")["n"].to_dict()
    # decoder-bpe is told apart at 3 seeds and gets no more; the tied two go on to 4
    assert seeds == {"decoder-char": 4, "decoder-modern": 4, "decoder-bpe": 3}
    assert not result.comparison.cells["best"].any()
    (note,) = [n for n in result.comparison.notes if n.startswith("seeds until answered")]
    assert "3 look(s)" in note and "still not told apart from" in note and "4 seeds" in note
    assert said.count("one more seed for") == 2
    assert math.isclose(result.comparison.level, look_levels(0.95, 4)[-1])


@pytest.mark.parametrize(
    "options, message",
    [
        (["--max-seeds", "3"], "goes with seeds='auto'"),
        (["--seeds", "auto", "--max-seeds", "1"], "at least 2"),
        (["--seeds", "auto", "--stack-seeds"], "choose one"),
        (["--seeds", "many"], "expected a positive integer or auto"),
    ],
)
def test_bad_seed_budgets_fail_before_training(tiny_text, options, message):
    result = run_cli("sweep", "decoder-char", "--on", tiny_text, *options)
    assert result.code == 2 and message in result.err, result


def test_the_same_sweep_again_reuses_every_seed_it_trained(tiny_text, monkeypatch):
    means = {"decoder-char": 1.0, "decoder-modern": 2.0}
    first, _ = auto_sweep(tiny_text, monkeypatch, means, most=6)
    again, said = auto_sweep(tiny_text, monkeypatch, means, most=6)
    assert "0 trained, 6 already finished" in said  # seeds 0 and 1, then the added seed 2
    assert again.comparison.cells["runs"].tolist() == first.comparison.cells["runs"].tolist()
