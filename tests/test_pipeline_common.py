"""The steps the built-in pipelines share (zoo.pipelines.common)."""
import numpy as np

from zoo.pipelines.common import log_softmax, loop_metrics, softmax, special_ids
from zoo.plugins.char import CharTokenizer


def test_softmax_is_stable_normalized_and_ignores_masked_entries():
    logits = np.array([[1000.0, 1001.0, -np.inf], [0.0, np.log(3.0), -np.inf]])
    probs = softmax(logits)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs[1], [0.25, 0.75, 0.0])
    np.testing.assert_allclose(probs[0, :2], [1 / (1 + np.e), np.e / (1 + np.e)])
    np.testing.assert_allclose(np.exp(log_softmax(logits)), probs)


def test_special_ids_are_the_contract_tokens():
    tokenizer = CharTokenizer.train(["abc"], None)
    assert special_ids(tokenizer) == [tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id] == [0, 1, 2]


def test_loop_metrics_are_what_every_task_reports():
    class Result:
        steps, best_step, train_loss, tokens_per_s, train_time = 3, 2, 1.5, 100.0, 0.25

    assert loop_metrics(Result()) == {"steps": 3, "best_step": 2, "train_loss": 1.5,
                                      "tokens_per_s": 100.0, "train_time": 0.25}
