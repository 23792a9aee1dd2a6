"""Built-in task pipelines, registered through the same hook third parties use.

Each registration declares its task (``zoo.plugin.Task``): the loss, the module output, the
metrics with their directions and units, the primary metric and the datasets it can use.
The core knows these tasks only through these declarations.
"""

from zoo.plugin import Metric, Task, hookimpl

LOSS = "zoo.plugin.losses:cross_entropy"
ACCURACY = Metric("accuracy", "higher", "fraction correct")

LANGUAGE_MODELING = Task(
    name="language-modeling",
    loss=LOSS,
    output="logits [B, T, vocab_size]: the next token at every position",
    metrics=(
        Metric("loss", "lower", "nats per token"),
        Metric("bpc", "lower", "bits per character"),
        Metric("bpb", "lower", "bits per byte"),
        Metric("ppl", "lower", "perplexity"),
        Metric("unk_rate", "lower", "fraction of tokens", "tokens that are <unk>"),
    ),
    primary="val_bpc",
    columns=("text",),
    serves=("classification",),  # labelled text is text too
    description="next-token prediction on text",
    output_shape=("B", "T", "vocab_size"),
)

CLASSIFICATION = Task(
    name="classification",
    loss=LOSS,
    output="logits [B, num_classes] (inputs are right-padded and start with <cls>)",
    metrics=(
        Metric("loss", "lower", "nats per example"),
        ACCURACY,
        Metric("macro_f1", "higher", "mean F1 over classes"),
        Metric("truncated", "lower", "fraction of training texts cut to block_size"),
    ),
    primary="test_accuracy",
    prediction="zoo.pipelines.classification:ClassPrediction",
    columns=("text", "label"),
    curve_metric="val_accuracy",
    description="one label per text",
    output_shape=("B", "num_classes"),
)

NEXT_ITEM = Task(
    name="next-item",
    loss=LOSS,
    output="logits [B, vocab_size] for the token after the last real position",
    metrics=(
        Metric("loss", "lower", "nats per item"),
        ACCURACY,
        Metric("*_accuracy", "higher", "fraction correct", "accuracy within one family"),
        Metric("loss_*", "lower", "nats per item", "loss within one family"),
    ),
    primary="test_accuracy",
    prediction="zoo.pipelines.next_item:ItemPrediction",
    columns=("text",),
    serves=("classification", "language-modeling"),  # any text can be cut into windows
    curve_metric="val_accuracy",
    description="predict the next token of a context",
    output_shape=("B", "vocab_size"),
)

MASKED_LANGUAGE_MODELING = Task(
    name="masked-language-modeling",
    loss=LOSS,
    output="logits [B, T, vocab_size]: the original token at every position (only the "
    "masked ones are scored)",
    output_shape=("B", "T", "vocab_size"),
    metrics=(
        Metric("loss", "lower", "nats per masked token"),
        Metric(
            "accuracy", "higher", "fraction of masked tokens", "masked tokens predicted exactly"
        ),
    ),
    primary="test_accuracy",
    columns=("text",),
    serves=("classification", "language-modeling"),  # any text, a labelled set's too
    description="BERT's pretraining: predict the 15% of tokens that are masked, replaced or kept",
)

SEQ2SEQ = Task(
    name="seq2seq",
    loss=LOSS,
    output="logits [B, T, vocab_size] at the target's positions of a packed batch: the "
    "source right-padded, then <cls> and the target (attention_mask 1 source, 2 target, "
    "0 padding; zoo.plugin.layers.split_source_target)",
    metrics=(
        Metric("loss", "lower", "nats per target token"),
        Metric("bleu", "higher", "BLEU (0-100)", "corpus BLEU by sacreBLEU on the decoded text"),
        Metric("chrf", "higher", "chrF (0-100)", "corpus chrF by sacreBLEU on the decoded text"),
        Metric("exact_match", "higher", "fraction of outputs", "outputs equal to the target"),
        Metric("truncated", "lower", "fraction of training pairs cut to the context"),
    ),
    primary="test_bleu",
    prediction="zoo.pipelines.seq2seq:Translation",
    columns=("text", "label"),
    adapts=("language-modeling",),  # any language model, trained as a prefix LM
    description="read a source text, write its target (translation, transduction)",
)


@hookimpl
def register_pipelines(register):
    register(
        LANGUAGE_MODELING,
        "zoo.pipelines.language_modeling:LanguageModeling",
        config="zoo.pipelines.language_modeling:LanguageModelingConfig",
        description="next-token prediction on text; reports loss, perplexity, bits per character",
    )
    register(
        CLASSIFICATION,
        "zoo.pipelines.classification:Classification",
        config="zoo.pipelines.classification:ClassificationConfig",
        description="one label per text; reports accuracy, macro F1, per-class "
        "precision/recall/F1 and the confusion matrix",
    )
    register(
        NEXT_ITEM,
        "zoo.pipelines.next_item:NextItem",
        config="zoo.pipelines.next_item:NextItemConfig",
        description="predict the next token of a context; reports accuracy (per family "
        "where rows name one) and loss",
    )
    register(
        MASKED_LANGUAGE_MODELING,
        "zoo.pipelines.masked_language_modeling:MaskedLanguageModeling",
        config="zoo.pipelines.masked_language_modeling:MaskedLanguageModelingConfig",
        description="BERT-style pretraining on any text; reports masked-token loss and "
        "accuracy on fixed masks of validation and test",
    )
    register(
        SEQ2SEQ,
        "zoo.pipelines.seq2seq:Seq2Seq",
        config="zoo.pipelines.seq2seq:Seq2SeqConfig",
        description="source text to target text with an encoder-decoder, or any language "
        "model as a prefix LM; beam search with a key/value cache; reports sacreBLEU's BLEU "
        "and chrF, exact match and loss",
    )
