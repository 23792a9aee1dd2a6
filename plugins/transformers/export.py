"""``zoo export RUN_ID DIR``: a trained run as a folder transformers loads with no zoo
installed (``AutoModelForCausalLM`` / ``AutoModelForSequenceClassification`` and
``AutoTokenizer.from_pretrained(DIR)``).

- gpt2, llama, bert runs are transformers models already: saved with ``save_pretrained``.
- decoder (and numpy, its NumPy twin) language-modeling and next-item runs map onto GPT-2's
  layout: pre-LN blocks, learned positions, a 4x GELU MLP, LayerNorm eps 1e-5, a tied or
  untied head. The decoder's Linear weights are [out, in], GPT-2's Conv1D ones [in, out], so
  they are transposed; its fused qkv rows [q; k; v] are GPT-2's c_attn columns in the same
  order. GELU "exact" is GPT-2's "gelu", "tanh" its "gelu_new". GPT-2 always has biases; a
  run with ``bias=false`` gets zero biases, which compute exactly what no bias does.
- what has no transformers counterpart (a decoder classification head has a bias, GPT-2's
  ``score`` layer has none; the pre-LN, mean-pooling encoder; the digits model) is a
  ZooError saying why: exit 2.

The tokenizer (any tokenizer backed by Hugging Face ``tokenizers``) is saved as a
``PreTrainedTokenizerFast`` with its ``tokenizer.json`` and its special tokens.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import transformers
from zoo.plugins.transformers.card import model_card

from zoo.plugin import ZooError, load_trained
from zoo.plugin.io import atomic_folder, check_new_folder, load_json

DECODER_LAYOUT = ("decoder", "numpy")  # architectures with the decoder's weight names
NATIVE = ("gpt2", "llama", "bert")
GELU = {"exact": "gelu", "tanh": "gelu_new"}
TOLERANCE = 1e-4  # largest logit difference an export may show against the run

transformers.utils.logging.disable_progress_bar()  # no bar for writing a tiny model


def export_run(run_id: str, folder: str | Path, force: bool = False) -> dict:
    """Write the run to ``folder`` (new or empty; replaced whole with ``force``), all at once:
    a failed or killed export leaves nothing there. Returns what was written and the
    measured logit difference between the exported model and the run on a random batch."""
    folder = Path(folder)
    check_new_folder(folder, force=force, what="export to")  # before any work
    trained = load_trained(run_id, device="cpu", precision="fp32")  # saved from the CPU
    architecture, task = trained.config["architecture"], trained.task
    if architecture in NATIVE:
        model = trained.model.module.hf
    elif architecture in DECODER_LAYOUT:
        model = decoder_as_gpt2(trained)
    else:
        raise ZooError(
            f"{architecture} runs cannot be exported: transformers has no "
            f"architecture with the same layout (exportable: "
            f"{', '.join(NATIVE + DECODER_LAYOUT)})"
        )
    if task == "classification":
        names = class_names(trained)
        model.config.id2label = dict(enumerate(names))
        model.config.label2id = {name: i for i, name in enumerate(names)}
    tokenizer = fast_tokenizer(trained)
    difference = logit_difference(trained, model)
    if not difference <= TOLERANCE:
        raise ZooError(
            f"the exported model's logits differ from the run's by {difference:.3g} "
            f"(more than {TOLERANCE}); nothing was written"
        )
    exported_as = (
        "saved as it is"
        if architecture in NATIVE
        else f"the {architecture} weights in GPT-2's layout"
    )
    card = model_card(trained, type(model).__name__, exported_as=exported_as)
    with atomic_folder(folder, force=force, what="export to") as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "README.md").write_text(card, encoding="utf-8")
    return {
        "run_id": trained.run_id,
        "folder": str(folder),
        "class": type(model).__name__,
        "tokenizer": type(tokenizer).__name__,
        "max_logit_difference": difference,
    }


def command(args) -> int:
    """`zoo export RUN_ID DIR`."""
    import json

    done = export_run(args.run_id, args.folder, force=args.force)
    if args.json:
        print(json.dumps(done))
    else:
        print(
            f"exported run {done['run_id']} to {done['folder']} as {done['class']} with a "
            f"{done['tokenizer']}; largest logit difference on a check batch "
            f"{done['max_logit_difference']:.2g}"
        )
    return 0


def class_names(trained) -> list[str]:
    """The run's class names, by index (recorded with its metrics, and in classes.json)."""
    names = (trained.row.get("metrics") or {}).get("class_names")
    path = trained.folder.file("classes.json")
    if not names and path.is_file():
        names = load_json(path)
    if not names:
        raise ZooError(f"run {trained.run_id} records no class names")
    return [str(name) for name in names]


def decoder_as_gpt2(trained) -> transformers.GPT2PreTrainedModel:
    """The decoder's weights in a GPT2LMHeadModel (see the module docstring)."""
    if trained.task == "classification":
        raise ZooError(
            "decoder classification runs cannot be exported: the decoder's "
            "classification head has a bias, and GPT2ForSequenceClassification's "
            "score layer has none"
        )
    cfg = trained.config["configs"]["model"]
    vocab = trained.config["spec"]["vocab_size"]
    C, n_layer = cfg["n_embd"], cfg["n_layer"]
    config = transformers.GPT2Config(
        vocab_size=vocab,
        n_positions=cfg["block_size"],
        n_embd=C,
        n_layer=n_layer,
        n_head=cfg["n_head"],
        n_inner=4 * C,
        activation_function=GELU[cfg.get("gelu", "tanh")],
        resid_pdrop=cfg["dropout"],
        embd_pdrop=cfg["dropout"],
        attn_pdrop=cfg["dropout"],
        layer_norm_epsilon=1e-5,
        tie_word_embeddings=cfg.get("tie_weights", True),
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=trained.tokenizer.pad_id,
    )
    weights = {k: np.asarray(v, dtype=np.float32) for k, v in trained.model.state_dict().items()}

    def get(name, shape=None):  # a tensor, or zeros where bias=false left it out
        if name in weights:
            return torch.from_numpy(weights[name])
        if name.endswith(".bias") and not cfg.get("bias", True):
            return torch.zeros(shape)
        raise ZooError(f"run {trained.run_id}: its weights have no {name}")

    state = {
        "transformer.wte.weight": get("tok_emb.weight"),
        "transformer.wpe.weight": get("pos_emb.weight"),
        "transformer.ln_f.weight": get("ln_f.weight"),
        "transformer.ln_f.bias": get("ln_f.bias", C),
    }
    for i in range(n_layer):
        ours, theirs = f"blocks.{i}.", f"transformer.h.{i}."
        for a, b in (("ln1", "ln_1"), ("ln2", "ln_2")):
            state[f"{theirs}{b}.weight"] = get(f"{ours}{a}.weight")
            state[f"{theirs}{b}.bias"] = get(f"{ours}{a}.bias", C)
        for a, b, width in (
            ("attn.qkv", "attn.c_attn", 3 * C),
            ("attn.proj", "attn.c_proj", C),
            ("mlp.fc", "mlp.c_fc", 4 * C),
            ("mlp.proj", "mlp.c_proj", C),
        ):
            state[f"{theirs}{b}.weight"] = get(
                f"{ours}{a}.weight"
            ).T.contiguous()  # Conv1D: [in, out]
            state[f"{theirs}{b}.bias"] = get(f"{ours}{a}.bias", width)
    state["lm_head.weight"] = (
        get("lm_head.weight") if "lm_head.weight" in weights else state["transformer.wte.weight"]
    )
    model = transformers.GPT2LMHeadModel(config)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise ZooError(
            f"run {trained.run_id}: weights do not map onto GPT-2 "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model.eval()


def fast_tokenizer(trained) -> transformers.PreTrainedTokenizerFast:
    """The run's tokenizer as a transformers fast tokenizer, special tokens named."""
    backend = getattr(trained.tokenizer, "backend", None)
    if backend is None:
        raise ZooError(
            f"the {trained.config['tokenizer']} tokenizer is not built on Hugging "
            "Face tokenizers, so it has no transformers equivalent"
        )
    specials = {}
    for role, token_id in (
        ("pad_token", trained.tokenizer.pad_id),
        ("unk_token", trained.tokenizer.unk_id),
        ("cls_token", trained.tokenizer.cls_id),
    ):
        if token_id is not None:
            specials[role] = backend.id_to_token(token_id)
    # split_special_tokens: a literal "<pad>" in a text is text, as zoo encodes it.
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=trained.context_length or 1024,
        split_special_tokens=True,
        **specials,
    )


@torch.no_grad()
def logit_difference(trained, model) -> float:
    """Largest |logit| difference between the run and the exported model on a random batch
    of real tokens (fp32 both)."""
    task, vocab = trained.task, trained.config["spec"]["vocab_size"]
    length = min(trained.context_length or 16, 32)
    ids = np.random.default_rng(0).integers(3, vocab, size=(4, length))
    if task == "classification" and trained.tokenizer.cls_id is not None:
        ids[:, 0] = trained.tokenizer.cls_id
    ours = trained.model.logits(ids)
    output = model.eval()(
        input_ids=torch.from_numpy(ids), attention_mask=torch.ones(ids.shape, dtype=torch.long)
    )
    theirs = output.logits.float().numpy()
    if task == "next-item":  # the run reads the last position, the exported model every one
        theirs = theirs[:, -1]
    difference = float(np.max(np.abs(ours - theirs)))
    return difference if math.isfinite(difference) else math.inf
