"""The generic transformers adapter: every model type of transformers' auto mappings is an
`hf-<type>` architecture whose shape comes from one rule over its config class, with
per-type overrides where the rule fails. Tiny configs; one end-to-end run."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import TINY_ANY, run_cli

from zoo.errors import ZooError

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest


def test_the_types_are_read_from_transformers_mappings_without_importing_it():
    from zoo.plugins.transformers import types

    types.model_types.cache_clear()
    before = {m for m in ("torch", "transformers") if m in sys.modules}
    read = types.model_types()
    assert {m for m in ("torch", "transformers") if m in sys.modules} == before
    from transformers.models.auto import modeling_auto as auto

    assert set(read) == set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(
        auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    ) | set(auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES) | set(
        auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES
    )
    assert read["mamba"] == {
        "language-modeling": "MambaForCausalLM",
        "next-item": "MambaForCausalLM",
    }
    # an encoder's next item comes from its masked-LM head, which reads the whole context
    assert read["bert"]["next-item"] == "BertForMaskedLM"
    assert read["qwen2"]["classification"] == "Qwen2ForSequenceClassification"


def test_the_type_list_is_cached_per_installed_transformers(monkeypatch):
    from zoo.plugins.transformers import types

    parses = []
    parsed = types._parsed
    monkeypatch.setattr(types, "_parsed", lambda source: parses.append(source) or parsed(source))
    first = types._mappings()
    assert len(parses) == 1 and types.cache_file().is_file()
    assert types._mappings() == first and len(parses) == 1  # read back, not parsed again
    # another transformers (a new version, or the file rewritten) is parsed again
    key = types._cache_key(types._source())
    monkeypatch.setattr(types, "_cache_key", lambda source: {**key, "transformers": "9.9.9"})
    assert types._mappings() == first and len(parses) == 2
    assert json.loads(types.cache_file().read_text())["key"]["transformers"] == "9.9.9"
    assert types._mappings() == first and len(parses) == 2


@pytest.mark.parametrize("damage", ["{not json", '{"key": 1}', "[]", "null", "\x00\xff"])
def test_a_damaged_type_cache_is_parsed_again_and_rewritten(monkeypatch, damage):
    from zoo.plugins.transformers import types

    expected = types._mappings()
    types.cache_file().write_bytes(damage.encode("latin-1"))
    parses = []
    parsed = types._parsed
    monkeypatch.setattr(types, "_parsed", lambda source: parses.append(source) or parsed(source))
    assert types._mappings() == expected and len(parses) == 1
    assert json.loads(types.cache_file().read_text())["mappings"] == expected


def test_an_unwritable_cache_folder_still_lists(monkeypatch, tmp_path):
    from zoo.plugins.transformers import types

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ZOO_CACHE", str(tmp_path / "a-file"))  # not a folder: no cache
    assert "gpt2" in types._mappings()["MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"]


def test_the_rule_maps_zoo_shapes_through_each_config_class_names():
    from zoo.plugins.transformers.configs import layout_of

    gpt2 = layout_of("gpt2")  # through GPT2Config.attribute_map
    assert gpt2.shape == {
        "n_layer": "n_layer",
        "n_head": "n_head",
        "n_embd": "n_embd",
        "block_size": "n_positions",
    }
    assert set(gpt2.dropouts) >= {"resid_pdrop", "embd_pdrop", "attn_pdrop"}
    assert gpt2.mlp_width == "n_inner"
    bart = layout_of("bart")  # through attribute_map onto d_model, encoder_layers, ...
    assert bart.shape["n_embd"] == "d_model" and "dropout" in bart.dropouts
    mamba = layout_of("mamba")  # no attention, no position table
    assert set(mamba.shape) == {"n_layer", "n_embd"}
    rwkv = layout_of("rwkv")  # an alias: its context is context_length
    assert rwkv.shape["block_size"] == "context_length"


def hf_config(architecture: str, vocab_size: int = 50, **settings):
    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo

    cls = get_zoo().architectures.get(architecture).config_class()
    tiny = {"n_layer": 2, "n_head": 2, "n_embd": 16, "block_size": 16}
    return build_config(cls, {**tiny, **settings}).transformers_config(vocab_size)


def test_sizes_that_follow_from_the_shape_are_derived_not_transformers_defaults():
    mistral = hf_config("hf-mistral")  # defaults: 8 key-value heads, MLP 14336 wide
    assert (mistral.hidden_size, mistral.num_hidden_layers) == (16, 2)
    assert mistral.num_key_value_heads == 2 and mistral.intermediate_size == 64
    assert mistral.head_dim == 8 and mistral.max_position_embeddings == 16
    assert hf_config("hf-codegen").rotary_dim == 8  # default 64: wider than a head
    gqa = hf_config("hf-mistral", num_key_value_heads=1)  # a set field wins
    assert gqa.num_key_value_heads == 1


def test_every_scalar_field_is_a_setting_and_transformers_checks_it():
    from zoo.errors import ZooError

    mamba = hf_config("hf-mamba", state_size=4, n_head=4)  # n_head: no heads, ignored
    assert mamba.state_size == 4 and mamba.hidden_size == 16
    assert hf_config("hf-qwen2", rms_norm_eps=1e-3).rms_norm_eps == 1e-3
    with pytest.raises(ZooError, match="n_embd .16. must be divisible by n_head .3."):
        hf_config("hf-qwen2", n_head=3)


@pytest.mark.parametrize(
    "model_type, settings, why",
    [
        ("mamba2", {}, "hidden_size \\* expand"),
        ("gpt_neo", {}, "attention_layers"),
        ("zamba2", {}, "layer_types"),
    ],
)
def test_overrides_build_the_types_the_rule_alone_cannot(model_type, settings, why):
    """Each override is needed (without it transformers refuses the tiny config) and
    enough (with it the config builds)."""
    from zoo.plugins.transformers import configs

    from zoo.errors import ZooError

    config = hf_config(f"hf-{model_type}", **settings)
    assert config.model_type == model_type
    saved = configs.OVERRIDES.pop(model_type)
    configs.layout_of.cache_clear()
    try:
        with pytest.raises((ValueError, ZooError), match=why):
            configs.layout_of(model_type)  # the rule alone
            hf_config(f"hf-{model_type}")
    finally:
        configs.OVERRIDES[model_type] = saved
        configs.layout_of.cache_clear()
    assert hf_config(f"hf-{model_type}").model_type == model_type


@pytest.mark.parametrize(
    "model_type, heads, groups",
    [
        ("mamba2", "num_heads", "n_groups"),
        ("bamba", "mamba_n_heads", "mamba_n_groups"),
        ("falcon_h1", "mamba_n_heads", "mamba_n_groups"),
    ],
)
def test_a_mamba2_mixer_splits_its_inner_width_into_n_head_heads_of_one_group(
    model_type, heads, groups, monkeypatch
):
    """Defaults of 128 heads and 8 groups fit no small model: the heads follow n_head and
    B and C come in one group (which divides any number of heads)."""
    from zoo.plugins.transformers import configs

    config = hf_config(f"hf-{model_type}", n_embd=32)
    assert getattr(config, heads) == 2 and getattr(config, groups) == 1
    monkeypatch.setattr(configs, "_ssm_sizes", lambda *args: {})  # the rule without it
    configs.layout_of.cache_clear()
    try:
        config = hf_config(f"hf-{model_type}", n_embd=32)
        assert (getattr(config, heads), getattr(config, groups)) != (2, 1)
    except (ValueError, ZooError):
        pass  # transformers refuses it outright (Bamba: heads must divide the width)
    finally:
        configs.layout_of.cache_clear()


def test_a_small_jamba_keeps_an_attention_layer():
    # transformers' cache (generation, export) needs one; the default puts it 5th of 8
    for depth in (2, 3, 8, 16):
        jamba = hf_config("hf-jamba", n_layer=depth)
        assert "attention" in jamba.layers_block_type, depth
    assert hf_config("hf-jamba", n_layer=16).attn_layer_offset == 4  # the default, deep enough


def test_the_pages_preset_for_a_type_the_rule_does_not_place_builds_as_it_says(
    monkeypatch, tmp_path
):
    """docs/architectures/transformers.md's registry.toml block, read as a catalogue."""
    import re
    import textwrap

    from conftest import REPO

    from zoo.core import loading
    from zoo.core.names import resolve_model

    page = (REPO / "docs" / "architectures" / "transformers.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```toml\n(.*?)```", page, re.S)
    (tmp_path / "registry.toml").write_text(textwrap.dedent(block), encoding="utf-8")
    monkeypatch.setenv("ZOO_REGISTRY", str(tmp_path / "registry.toml"))
    loading.reset_zoo()
    try:
        spec = resolve_model("jamba-char", loading.get_zoo())
    finally:
        loading.reset_zoo()
    assert spec.architecture.name == "hf-jamba" and spec.tokenizer.name == "char"
    jamba = hf_config("hf-jamba", **spec.overrides)
    assert jamba.layers_block_type == ["mamba", "attention", "mamba", "attention"]


def test_a_dropout_the_type_refuses_stays_unset_and_softcapped_attention_is_eager():
    import transformers
    from zoo.plugins.transformers import configs
    from zoo.plugins.transformers.model import attention_of

    diff = hf_config("hf-diffllama", dropout=0.1)
    assert diff.attention_dropout == 0.0  # DiffLlama raises for any other
    assert "attention_dropout" in configs.NO_DROPOUT["diffllama"]
    assert "attention_dropout" not in configs.layout_of("diffllama").dropouts
    gemma2 = hf_config("hf-gemma2")  # SDPA cannot cap attention scores with a tanh
    assert attention_of(transformers.Gemma2ForCausalLM, gemma2) == "eager"
    llama = hf_config("hf-llama")
    assert attention_of(transformers.LlamaForCausalLM, llama) == "zoo"


def test_a_type_transformers_cannot_build_one_layer_deep_exits_2_before_training(tiny_text):
    """transformers' RWKV divides by num_hidden_layers - 1 when it initialises (the bound is
    needed: a one-layer model fails in transformers itself), so n_layer=1 is refused in one
    line, exit 2, before anything is tokenized; two layers build."""
    import transformers

    with pytest.raises(ZeroDivisionError):
        transformers.RwkvForCausalLM(
            transformers.RwkvConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1)
        )
    refused = run_cli("run", "hf-rwkv-char", tiny_text, "--set", "n_layer=1")
    assert refused.code == 2 and "tokenized" not in refused.err, refused
    assert "hf-rwkv needs n_layer of 2 or more (transformers' RWKV initialisation" in refused.err
    assert hf_config("hf-rwkv", n_layer=2).num_hidden_layers == 2


def test_a_local_attention_window_spans_half_the_context():
    """Longformer's and LED's attention_window, LongT5's local_radius and PegasusX's
    block_size (named like zoo's context, so only an override sets it) follow the context:
    their defaults (512, 127, 512) pad a 16-token input hundreds of positions wide."""
    assert hf_config("hf-longformer").attention_window == 8  # block_size 16
    assert hf_config("hf-led").attention_window == 8
    assert hf_config("hf-longt5").local_radius == 4
    assert hf_config("hf-longt5", local_radius=2).local_radius == 2  # a setting wins
    pegasus_x = hf_config("hf-pegasus_x")
    assert pegasus_x.block_size == 8 and pegasus_x.max_position_embeddings == 16


def test_a_block_sparse_attention_too_long_for_the_context_is_full_from_the_start():
    """BigBird's block-sparse attention needs more than 704 tokens; below, transformers
    switches to full attention at the first forward, making new layers there (a draw from
    torch's generator mid-run, which a resumed run would repeat after its checkpoint). zoo
    builds it full, so a forward draws nothing."""
    import torch

    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo
    from zoo.plugin import TaskSpec

    assert hf_config("hf-big_bird", block_size=1024).attention_type == "block_sparse"
    entry = get_zoo().architectures.get("hf-bigbird_pegasus")
    tiny = {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16}
    model = entry.load()(build_config(entry.config_class(), tiny), TaskSpec("seq2seq", 20))
    assert model.hf.config.attention_type == "original_full"
    ids = torch.randint(3, 20, (2, 8))
    state = torch.get_rng_state()
    with torch.no_grad():
        model.hf.eval()(input_ids=ids, decoder_input_ids=ids)
    assert torch.equal(torch.get_rng_state(), state)


def test_a_type_whose_cached_forward_is_not_causal_keeps_the_cache_off():
    """FSMT drops its decoder's causal mask when use_cache is on (a forward over a whole
    target then reads later tokens): its models keep use_cache off, so an export's forward
    computes what zoo trained."""
    import torch

    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo
    from zoo.plugin import TaskSpec

    entry = get_zoo().architectures.get("hf-fsmt")
    tiny = {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16}
    model = entry.load()(build_config(entry.config_class(), tiny), TaskSpec("seq2seq", 20))
    hf = model.hf.eval()
    assert hf.config.use_cache is False
    source, target = torch.randint(3, 20, (2, 6)), torch.randint(3, 20, (2, 5))
    changed = target.clone()
    changed[:, -1] = 3 + (changed[:, -1] - 2) % 17  # another last token
    with torch.no_grad():
        for cache, leaks in ((True, True), (None, False)):  # None: the config's
            a, b = (
                hf(input_ids=source, decoder_input_ids=t, use_cache=cache).logits[:, :-1]
                for t in (target, changed)
            )
            assert (not torch.equal(a, b)) is leaks


def test_a_class_whose_token_ids_must_be_numbers_keeps_its_own():
    assert isinstance(hf_config("hf-cwm").bos_token_id, int)
    assert hf_config("hf-llama").bos_token_id is None


def test_a_model_name_splits_at_its_last_dash():
    from zoo.core.loading import get_zoo
    from zoo.core.names import resolve_model

    spec = resolve_model("hf-deberta-v2-char", get_zoo())
    assert (spec.architecture.name, spec.tokenizer.name) == ("hf-deberta-v2", "char")
    assert spec.architecture.tasks == (
        "classification",
        "next-item",
        "masked-language-modeling",
    )


@pytest.mark.slow
def test_a_transformers_type_trains_and_exports_in_transformers_layout(tiny_text, tmp_path):
    ran = run_cli(
        "run",
        "hf-mamba-char",
        tiny_text,
        "--steps",
        4,
        *TINY_ANY,
        "--set",
        "sample_tokens=5",
        "--json",
    )
    assert ran.code == 0, ran
    run = json.loads(ran.out)
    assert run["architecture"] == "hf-mamba" and run["status"] == "finished"
    exported = run_cli("export", run["run_id"], tmp_path / "out")
    assert exported.code == 0, exported
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["model_type"] == "mamba" and config["architectures"] == ["MambaForCausalLM"]


def test_an_encoder_decoder_shapes_its_decoder_as_its_encoder():
    bart = hf_config("hf-bart")  # defaults: 12 decoder layers, 4096-wide MLPs
    assert (bart.encoder_layers, bart.decoder_layers) == (2, 2)
    assert bart.decoder_attention_heads == 2 and bart.decoder_ffn_dim == 64
    prophetnet = hf_config("hf-prophetnet")  # names its stacks num_{en,de}coder_layers
    assert (prophetnet.num_encoder_layers, prophetnet.num_decoder_layers) == (2, 2)
    assert prophetnet.num_decoder_attention_heads == 2 and prophetnet.decoder_ffn_dim == 64
    seamless = hf_config("hf-seamless_m4t")  # the standard names map onto its decoder
    assert (seamless.encoder_layers, seamless.decoder_layers) == (2, 2)  # default 24
    assert seamless.encoder_attention_heads == 2


def test_every_mlp_width_follows_the_shape():
    moe = hf_config("hf-qwen2_moe")  # defaults: experts 1408 wide, a shared one 5632
    assert moe.moe_intermediate_size == 64 and moe.shared_expert_intermediate_size == 64
    assert hf_config("hf-deepseek_v2").num_experts_per_tok == 2  # unset by the class


@pytest.mark.parametrize(
    "model_type, task", [("roberta", "classification"), ("prophetnet", "language-modeling")]
)
def test_positions_that_count_from_the_padding_id_get_the_longer_table(model_type, task):
    """RoBERTa's (and ProphetNet's) position ids start at padding id + 1, and ProphetNet's
    predicting stream reads one further: a full-length input needs the table the override
    gives it (the rule alone makes it block_size rows: an index error)."""
    import torch
    from zoo.plugins.transformers import configs

    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo
    from zoo.plugin import TaskSpec

    entry = get_zoo().architectures.get(f"hf-{model_type}")
    config = build_config(
        entry.config_class(), {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16}
    )
    ids = torch.randint(3, 50, (2, 16))

    def forward():
        model = entry.load()(config, TaskSpec(task, 50, 2 if task == "classification" else None, 0))
        return model(ids, torch.ones_like(ids))

    assert forward().shape[0] == 2
    saved = configs.OVERRIDES.pop(model_type)
    configs.layout_of.cache_clear()
    try:
        with pytest.raises(Exception, match="out of"):
            forward()
    finally:
        configs.OVERRIDES[model_type] = saved
        configs.layout_of.cache_clear()


@pytest.mark.parametrize(
    "model_type, loads_with", [("gpt2", "AutoTokenizer"), ("qwen2", "PreTrainedTokenizerFast")]
)
def test_export_names_the_tokenizer_class_that_reads_its_tokenizer_json(
    model_type, loads_with, tmp_path
):
    """transformers gives some types a tokenizer class that rebuilds the vocabulary from its
    own files (qwen2); the export then loads with the class it saved."""
    import transformers
    from tokenizers import Tokenizer, models
    from zoo.plugins.transformers.export import tokenizer_class_for

    backend = Tokenizer(models.WordLevel({"<pad>": 0, "<unk>": 1, "a": 2}, unk_token="<unk>"))
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>"
    ).save_pretrained(tmp_path)
    transformers.AutoConfig.for_model(model_type).save_pretrained(tmp_path)
    assert tokenizer_class_for(tmp_path) == loads_with


@pytest.mark.parametrize("architecture", ["hf-t5", "hf-bart", "hf-marian"])
def test_encoder_decoders_read_the_packed_seq2seq_batch(architecture):
    """Source then target input, the mask 1 on the source and 2 on the target: logits at the
    target's positions, and they depend on the source (the encoder is read)."""
    import torch

    from zoo.core.config import build_config
    from zoo.core.loading import get_zoo
    from zoo.plugin import TaskSpec

    entry = get_zoo().architectures.get(architecture)
    assert "seq2seq" in entry.tasks
    config = build_config(
        entry.config_class(), {"n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 16}
    )
    model = entry.load()(config, TaskSpec("seq2seq", 40, None, 0)).eval()
    source, target = torch.randint(3, 40, (2, 5)), torch.randint(3, 40, (2, 4))
    mask = torch.cat([torch.ones(2, 5), torch.full((2, 4), 2)], dim=1).long()
    mask[0, 4] = 0  # a padded source
    with torch.no_grad():
        logits = model(torch.cat([source, target], dim=1), mask)
        other = model(torch.cat([source.flip(1), target], dim=1), mask)
    assert logits.shape == (2, 4, 40)
    assert not torch.allclose(logits, other)
