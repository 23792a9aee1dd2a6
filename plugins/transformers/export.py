"""The ``transformers`` export format (``zoo export RUN DIR --format transformers``, the
default for the architectures below): a trained run as a folder transformers loads with no
zoo installed (``AutoModelForCausalLM`` / ``AutoModelForSequenceClassification`` /
``AutoModelForMaskedLM`` and ``AutoTokenizer.from_pretrained(DIR)``, or
``PreTrainedTokenizerFast`` where transformers gives the model type a tokenizer class that
rebuilds the vocabulary: ``tokenizer_class_for``).

- runs of the transformers architectures (hf-*, gpt2, llama, bert) are transformers models already: saved with ``save_pretrained``.
- decoder (and numpy, its NumPy twin) language-modeling and next-item runs map onto GPT-2's
  layout: pre-LN blocks, learned positions, a 4x GELU MLP, LayerNorm eps 1e-5, a tied or
  untied head. The decoder's Linear weights are [out, in], GPT-2's Conv1D ones [in, out], so
  they are transposed; its fused qkv rows [q; k; v] are GPT-2's c_attn columns in the same
  order. GELU "exact" is GPT-2's "gelu", "tanh" its "gelu_new". GPT-2 always has biases; a
  run with ``bias=false`` gets zero biases, which compute exactly what no bias does.
- decoder runs with the modern block (rotary positions, RMSNorm, SwiGLU, no biases;
  grouped-query attention) map onto Llama's layout, and with experts onto Mixtral's.
- mamba language-modeling and next-item runs are MambaForCausalLM's network under other
  weight names (``zoo.plugins.mamba.layout``).
- what has no transformers counterpart is left to the ``onnx`` format: a decoder
  classification head has a bias, GPT-2's ``score`` layer has none; the encoder is pre-LN
  with its own embedding LayerNorm and pooling, where BERT is post-LN with a tanh pooler, so
  no BERT config computes it; the digits model is post-LN with sinusoidal positions.

The tokenizer (any tokenizer backed by Hugging Face ``tokenizers``) is saved as a
``PreTrainedTokenizerFast`` with its ``tokenizer.json`` (which frames and cuts a text as zoo
does) and its special tokens.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import transformers
from zoo.plugins.transformers.base import base_checkpoint
from zoo.plugins.transformers.types import architecture_names, model_type_of, model_types

from zoo.plugin import ZooError
from zoo.plugin.io import load_json

DECODER_LAYOUT = ("decoder", "numpy")  # architectures with the decoder's weight names
GELU = {"exact": "gelu", "tanh": "gelu_new"}
TOLERANCE = 1e-4  # largest logit difference an export may show against the run

transformers.utils.logging.disable_progress_bar()  # no bar for writing a tiny model


class TransformersExporter:
    """The ``transformers`` exporter (``zoo.hookspecs.register_exporters``)."""

    @staticmethod
    def unsupported(trained) -> str | None:
        architecture = trained.config["architecture"]
        if architecture in DECODER_LAYOUT and trained.task == "classification":
            return (
                "the decoder's classification head has a bias, and "
                "GPT2ForSequenceClassification's score layer has none"
            )
        if architecture in DECODER_LAYOUT and trained.task not in (
            "language-modeling",
            "next-item",
        ):
            return f"GPT-2 has no {trained.task} head of the decoder's layout"
        if architecture == "decoder" and decoder_config(trained).modern:
            from zoo.plugins.decoder.llama import llama_mismatch

            reason = llama_mismatch(decoder_config(trained))
            if reason is not None:
                return reason
        if architecture == "mamba":
            from zoo.plugins.mamba.layout import mamba_mismatch

            reason = mamba_mismatch(trained.task)
            if reason is not None:
                return reason
        if architecture not in (*architecture_names(), *DECODER_LAYOUT, "encdec", "mamba"):
            return f"transformers has no architecture with the {architecture} layout"
        if getattr(trained.tokenizer, "backend", None) is None:
            return f"the {trained.config['tokenizer']} tokenizer has no transformers equivalent"
        return None

    @staticmethod
    def write(trained, folder: Path) -> dict:
        from zoo.plugins.export.reading import reading_of

        architecture = trained.config["architecture"]
        native = architecture in architecture_names()
        if native:
            model = trained.network.hf
        elif architecture == "encdec":
            model = encdec_as_pegasus(trained)
        elif architecture == "mamba":
            model = mamba_in_transformers(trained)
        else:
            model = decoder_in_transformers(trained)
        if trained.task == "seq2seq":
            model.generation_config = greedy_generation(trained)
        if trained.task == "classification":
            names = class_names(trained)
            model.config.id2label = dict(enumerate(names))
            model.config.label2id = {name: i for i, name in enumerate(names)}
        difference = logit_difference(trained, model)
        if not difference <= TOLERANCE:
            raise ZooError(
                f"the exported model's logits differ from the run's by {difference:.3g} "
                f"(more than {TOLERANCE}); nothing was written"
            )
        model.save_pretrained(folder)
        fast_tokenizer(trained).save_pretrained(folder)
        tokenizer_class = tokenizer_class_for(folder)
        layout = type(model).__name__
        for suffix in ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration"):
            layout = layout.removesuffix(suffix)
        how = "saved as it is" if native else f"the {architecture} weights in {layout}'s layout"
        return {
            "library_name": "transformers",
            "pipeline_tag": reading_of(trained).pipeline_tag,
            "summary": f"a transformers `{type(model).__name__}` ({how}) with its fast "
            "tokenizer, for from_pretrained",
            "usage": usage(trained, auto_class(trained), tokenizer_class),
            "class": type(model).__name__,
            "base": base_checkpoint(trained),
        }

    @staticmethod
    @torch.no_grad()
    def check(trained, folder: Path, texts: list[str]) -> dict:
        from zoo.plugins.export.reading import compare, probabilities, zoo_probabilities

        model = getattr(transformers, auto_class(trained)).from_pretrained(folder).eval()
        tokenizer = getattr(transformers, tokenizer_class_for(folder)).from_pretrained(folder)
        if trained.task == "seq2seq":
            return check_translations(trained, model, tokenizer, texts)
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        logits = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).logits.float()
        mask = batch["attention_mask"].numpy()
        if trained.task == "next-item":  # zoo reads the last real position
            logits = logits[torch.arange(len(logits)), batch["attention_mask"].sum(dim=1) - 1]
        theirs = probabilities(trained, logits.numpy())
        ours, our_mask = zoo_probabilities(trained, texts)
        return compare(trained, ours, our_mask, theirs, mask)


def auto_class(trained) -> str:
    """The transformers Auto class that loads the export."""
    if trained.task == "classification":
        return "AutoModelForSequenceClassification"
    if trained.task == "seq2seq":
        return "AutoModelForSeq2SeqLM"
    architecture = trained.config["architecture"]
    if trained.task == "masked-language-modeling" or (
        architecture in architecture_names()
        and "language-modeling" not in model_types()[model_type_of(architecture)]
    ):  # an encoder's next-item head is its masked-LM head
        return "AutoModelForMaskedLM"
    return "AutoModelForCausalLM"


def tokenizer_class_for(folder: Path) -> str:
    """The class that loads the export's tokenizer as saved: AutoTokenizer, unless
    transformers ties the model type to a tokenizer class of its own that rebuilds the
    vocabulary from its files instead of reading tokenizer.json (for the types transformers
    lists as having a wrong class on the Hub: qwen2, phi3, modernbert, ...); then the class
    the export saved, PreTrainedTokenizerFast."""
    loaded = transformers.AutoTokenizer.from_pretrained(folder)
    generic = isinstance(loaded, transformers.PreTrainedTokenizerFast) and type(
        loaded
    ).__name__ in (
        "TokenizersBackend",
        "PreTrainedTokenizerFast",
    )
    return "AutoTokenizer" if generic else "PreTrainedTokenizerFast"


def usage(trained, auto: str, tokenizer_class: str = "AutoTokenizer") -> str:
    lines = [
        f"from transformers import {tokenizer_class}, {auto}"
        + (", pipeline" if trained.task == "classification" else ""),
        "",
        'folder = "FOLDER"',
        f"tokenizer = {tokenizer_class}.from_pretrained(folder)",
        f"model = {auto}.from_pretrained(folder)",
    ]
    if trained.task == "classification":
        lines += [
            'classify = pipeline("text-classification", model=model, tokenizer=tokenizer)',
            'print(classify(["the film was a delight"], truncation=True, top_k=None))',
        ]
    elif trained.task == "language-modeling":
        lines += [
            'prompt = tokenizer("ROMEO:", return_tensors="pt")',
            "room = tokenizer.model_max_length - prompt.input_ids.shape[1]  # the context's end",
            "out = model.generate(",
            "    **prompt,",
            "    max_new_tokens=min(40, room),",
            "    do_sample=False,",
            "    suppress_tokens=tokenizer.all_special_ids,  # as zoo generates",
            "    pad_token_id=tokenizer.pad_token_id,",
            ")",
            "print(tokenizer.decode(out[0], skip_special_tokens=True))",
        ]
    elif trained.task == "seq2seq":
        lines += [
            'batch = tokenizer(["1 2 3"], padding=True, truncation=True, return_tensors="pt")',
            "# greedy, as zoo predict --beam 1 (generation_config.json); num_beams=4 for",
            "# transformers' own beam search",
            "out = model.generate(**batch)",
            "print(tokenizer.batch_decode(out, skip_special_tokens=True))",
        ]
    else:
        lines += [
            'batch = tokenizer(["1 2 3"], padding=True, truncation=True, return_tensors="pt")',
            "logits = model(**batch).logits",
        ]
    return "\n".join(lines) + "\n"


def class_names(trained) -> list[str]:
    """The run's class names, by index (recorded with its metrics, and in classes.json)."""
    names = (trained.row.get("metrics") or {}).get("class_names")
    path = trained.folder.file("classes.json")
    if not names and path.is_file():
        names = load_json(path)
    if not names:
        raise ZooError(f"run {trained.run_id} records no class names")
    return [str(name) for name in names]


def decoder_config(trained):
    """A decoder run's config as the decoder plugin's dataclass."""
    from zoo.plugins.decoder import DecoderConfig

    return DecoderConfig(**trained.config["configs"]["model"])


def decoder_in_transformers(trained) -> transformers.PreTrainedModel:
    """A decoder run in GPT-2's layout, or with the modern block in Llama's (Mixtral's
    with experts)."""
    if trained.config["architecture"] == "decoder" and decoder_config(trained).modern:
        return decoder_as_llama(trained)
    return decoder_as_gpt2(trained)


def decoder_as_llama(trained) -> transformers.PreTrainedModel:
    """The modern decoder's weights in a LlamaForCausalLM, or with experts a
    MixtralForCausalLM (names mapped by the decoder plugin's ``llama.py``)."""
    from zoo.plugins.decoder.llama import hf_config, to_hf

    cfg = decoder_config(trained)
    values = hf_config(cfg, trained.config["spec"]["vocab_size"])
    kind = "Mixtral" if cfg.n_expert else "Llama"
    config = getattr(transformers, f"{kind}Config")(
        **values, pad_token_id=trained.tokenizer.pad_id, bos_token_id=None, eos_token_id=None
    )
    model = getattr(transformers, f"{kind}ForCausalLM")(config)
    weights = trained.model.state_dict()
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(to_hf(state, cfg), strict=False)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise ZooError(
            f"run {trained.run_id}: weights do not map onto {kind} "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model.eval()


def mamba_in_transformers(trained) -> transformers.MambaForCausalLM:
    """A mamba run's weights in a MambaForCausalLM (names mapped by the mamba plugin's
    ``layout.py``)."""
    from zoo.plugins.mamba import MambaConfig
    from zoo.plugins.mamba.layout import hf_config, to_hf

    cfg = MambaConfig(**trained.config["configs"]["model"])
    values = hf_config(cfg, trained.config["spec"]["vocab_size"])
    config = transformers.MambaConfig(
        **values, pad_token_id=trained.tokenizer.pad_id, bos_token_id=None, eos_token_id=None
    )
    model = transformers.MambaForCausalLM(config)
    weights = trained.model.state_dict()
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(to_hf(state), strict=False)
    if unexpected or missing:
        raise ZooError(
            f"run {trained.run_id}: weights do not map onto Mamba "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model.eval()


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
    from zoo.plugins.export.reading import exported_tokenizer, reading_of

    specials = {}
    for role, token_id in (
        ("pad_token", trained.tokenizer.pad_id),
        ("unk_token", trained.tokenizer.unk_id),
        ("cls_token", trained.tokenizer.cls_id),
    ):
        if token_id is not None:
            specials[role] = backend.id_to_token(token_id)
    # split_special_tokens: a literal "<pad>" in a text is text, as zoo encodes it. The
    # tokenizer frames and cuts as zoo does for the task (zoo.plugins.export.reading).
    keep = reading_of(trained).keep
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=exported_tokenizer(trained),
        model_max_length=trained.context_length or 1024,
        split_special_tokens=True,
        truncation_side="right" if keep == "start" else "left",
        **specials,
    )


@torch.no_grad()
def logit_difference(trained, model) -> float:
    """Largest |logit| difference between the run and the exported model on a random batch
    of real tokens (fp32 both)."""
    task, vocab = trained.task, trained.config["spec"]["vocab_size"]
    length = min(trained.context_length or 16, 32)
    ids = np.random.default_rng(0).integers(3, vocab, size=(4, length))
    if task == "seq2seq":  # sources, and targets half as long, one row of each padded
        mask = np.ones_like(ids)
        mask[0, length // 2 :] = 0
        target_mask = mask[::-1, : max(1, length // 2)].copy()
        return seq2seq_difference(
            trained, model, ids, mask, ids[:, : len(target_mask[0])], target_mask
        )
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


# -- sequence to sequence ------------------------------------------------------------------
def encdec_as_pegasus(trained) -> transformers.PegasusForConditionalGeneration:
    """An encdec run's weights in a PegasusForConditionalGeneration (the same network:
    ``zoo.plugins.encdec.pegasus``)."""
    from zoo.plugins.encdec import EncDecConfig
    from zoo.plugins.encdec.pegasus import hf_config, to_hf

    cfg = EncDecConfig(**trained.config["configs"]["model"])
    tokenizer = trained.tokenizer
    values = hf_config(
        cfg, trained.config["spec"]["vocab_size"], pad_id=tokenizer.pad_id, end_id=tokenizer.cls_id
    )
    model = transformers.PegasusForConditionalGeneration(transformers.PegasusConfig(**values))
    weights = trained.model.state_dict()
    state = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(to_hf(state, cfg), strict=False)
    if unexpected or missing:
        raise ZooError(
            f"run {trained.run_id}: weights do not map onto Pegasus "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    return model.eval()


def greedy_generation(trained) -> transformers.GenerationConfig:
    """What ``zoo predict --beam 1`` does, as generate()'s defaults: every target starts
    with ``<cls>`` and ends at it, padding and the unknown token are never generated, and an
    output stops after as many tokens as the run decodes."""
    from zoo.pipelines.seq2seq import Seq2SeqConfig, trained_layout

    tokenizer = trained.tokenizer
    cap = (trained.train_config or Seq2SeqConfig()).max_new_tokens
    return transformers.GenerationConfig(
        decoder_start_token_id=tokenizer.cls_id,
        eos_token_id=tokenizer.cls_id,
        pad_token_id=tokenizer.pad_id,
        suppress_tokens=[i for i in (tokenizer.pad_id, tokenizer.unk_id) if i is not None],
        max_new_tokens=trained_layout(trained).max_new(cap),
        do_sample=False,
        num_beams=1,
    )


@torch.no_grad()
def check_translations(trained, model, tokenizer, texts: list[str]) -> dict:
    """The export's greedy translations (``generate`` with the folder's defaults) against
    ``zoo predict --beam 1``'s, and the largest probability difference along them."""
    from zoo.pipelines.seq2seq import predict

    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    generated = model.generate(**batch)  # [N, 1 + new]: <cls>, the output, then padding
    theirs = tokenizer.batch_decode(generated, skip_special_tokens=True)
    ours = [p.output for p in predict(trained, texts, beam=1)]
    # the positions greedy search read: the start, then each output token before the end
    # (the last token generated is read by no step)
    read = generated[:, :-1]
    ended = (read[:, 1:] == trained.tokenizer.cls_id).long().cumsum(dim=1)
    read_mask = torch.cat([torch.ones_like(read[:, :1]), (ended == 0).long()], dim=1)
    difference = seq2seq_difference(
        trained,
        model,
        batch["input_ids"].numpy(),
        batch["attention_mask"].numpy(),
        read.numpy(),
        read_mask.numpy(),
        probabilities=True,
    )
    return {"max_difference": difference, "agree": ours == theirs, "compared": len(texts)}


@torch.no_grad()
def seq2seq_difference(
    trained, model, source, source_mask, target, target_mask, probabilities: bool = False
) -> float:
    """Largest difference between the run's and the exported model's logits (or next-token
    probabilities) at the real target positions of a batch, teacher-forced: sources [N, S]
    and target inputs [N, T] (``<cls>`` first), with their masks (1 = real)."""
    from zoo.plugins.export.reading import probabilities as zoo_probabilities

    from zoo.plugin.layers import SOURCE, TARGET

    inputs = np.concatenate([source, target], axis=1)
    mask = np.concatenate([source_mask * SOURCE, target_mask * TARGET], axis=1)
    ours = trained.model.logits(inputs, mask)
    theirs = (
        model.eval()(
            input_ids=torch.from_numpy(source),
            attention_mask=torch.from_numpy(source_mask),
            decoder_input_ids=torch.from_numpy(target),
            decoder_attention_mask=torch.from_numpy(target_mask),
        )
        .logits.float()
        .numpy()
    )
    if probabilities:
        ours, theirs = zoo_probabilities(trained, ours), zoo_probabilities(trained, theirs)
    real = target_mask.astype(bool)
    difference = float(np.max(np.abs(ours[real] - theirs[real]), initial=0.0))
    return difference if math.isfinite(difference) else math.inf
