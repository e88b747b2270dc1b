"""Auto-Bind's learned weights: a small network that scores each vertex's candidate bones.

Every (vertex, candidate bone) pair is embedded by the same MLP from its features
(kirin_addon/bind/weight_features.py); the vertex's pairs are pooled (masked max) so each pair is
scored knowing the others, and a softmax over the candidates gives the vertex's weights. A linear
term of the features is added to the score; it starts as the log of bone heat's weight, so the
untrained network gives bone heat and training learns the correction. One
network serves rigs of any size: it never sees a joint index, only how a bone relates to the vertex.
The feature normalisation is a buffer, so the exported graph takes raw features.
"""

from __future__ import annotations

import torch
from torch import nn

from .weight_config import WeightNetConfig


def _mlp(inputs: int, width: int, layers: int) -> nn.Sequential:
    parts: list[nn.Module] = []
    for n in range(layers):
        parts += [nn.Linear(inputs if n == 0 else width, width), nn.GELU()]
    return nn.Sequential(*parts)


class WeightNet(nn.Module):
    def __init__(self, config: WeightNetConfig):
        super().__init__()
        self.config = config
        self.register_buffer("mean", torch.zeros(config.features))
        self.register_buffer("std", torch.ones(config.features))
        self.pair = _mlp(config.features, config.width, config.layers)
        self.score = nn.Sequential(_mlp(2 * config.width, config.width, config.layers),
                                   nn.Linear(config.width, 1))
        self.linear = nn.Linear(config.features, 1)
        self.start_from(0)

    def start_from(self, column: int) -> None:
        """Make the untrained score the raw feature `column` (a classical set's log weight): the
        linear term reads it back through the normalisation, the MLP's last layer is zero."""
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.weight[0, column] = self.std[column]
            self.linear.bias.fill_(float(self.mean[column]))
            self.score[-1].weight.zero_()
            self.score[-1].bias.zero_()

    def forward(self, features: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """(N, K) weights of each vertex's K candidates from (N, K, F) features and the (N, K) bool
        mask of real candidates; rows sum to 1 over the valid ones."""
        normal = (features - self.mean) / self.std
        hidden = self.pair(normal)
        pooled = hidden.masked_fill(~valid[..., None], -1e4).amax(dim=1, keepdim=True)
        scored = self.score(torch.cat([hidden, pooled.expand_as(hidden)], dim=-1))
        logits = (scored + self.linear(normal))[..., 0]
        return torch.softmax(logits.masked_fill(~valid, -1e4), dim=1)
