"""A zoo plugin in one file: the mean of a text's token embeddings, then one linear layer."""

from dataclasses import dataclass

from zoo.plugin import hookimpl
from zoo.plugin.config import check_positive, sized


@dataclass
class MeanBagConfig:
    n_embd: int = sized(64, role="width")
    block_size: int = sized(128, role="context")  # the longest input, in tokens

    def __post_init__(self):
        check_positive(self, "n_embd", "block_size")


def build(config, spec):
    from torch import nn  # imported when a run needs it, so `zoo list` stays fast

    class MeanBag(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(spec.vocab_size, config.n_embd)
            self.head = nn.Linear(config.n_embd, spec.num_classes)

        def forward(self, input_ids, attention_mask):  # [B, T] -> [B, classes]
            mask = attention_mask.unsqueeze(-1).float()  # [B, T, 1]: 1 for real tokens
            summed = (self.embed(input_ids) * mask).sum(dim=1)  # [B, C]
            return self.head(summed / mask.sum(dim=1).clamp(min=1))

    return MeanBag()


@hookimpl
def register_architectures(register):
    register(
        "meanbag",
        build,
        config=MeanBagConfig,
        tasks=("classification",),
        description="the mean of the token embeddings, then one linear layer",
    )
