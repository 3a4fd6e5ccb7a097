"""LEAF's Shakespeare next-character model: an 8-d embedding of the 80-symbol vocabulary, two
stacked LSTM layers of 256 units and a linear layer to the 80 symbols, read at the last position.

The two layers are separate single-layer nn.LSTMs (same function as one 2-layer LSTM) so each
is a stage. Stages (FedMLB levels, L = 3): embedding, LSTM 1, LSTM 2 (outputs are whole
sequences (N, T, d)); the penultimate feature is LSTM 2's output at the last position.

`loss_on`: only "last" (LEAF: one target per sequence, logits (N, vocab)). "all" (a target at
every position) would return logits (N, vocab, T) and need targets (N, T) from the dataset,
`F.cross_entropy` on that layout, per-position accuracy in evaluation and per-position versions
of the label-dependent client terms (FedLC counts, FedNTD); the training loop's CE on y (N,)
does not allow it, so it is rejected rather than approximated.
"""

from __future__ import annotations

import torch
from torch import nn

from benchmark.models.staged import Stage, StagedModel


class ShakespeareLSTM(StagedModel):
    def __init__(self, num_classes: int = 80, vocab_size: int = 80, embed_dim: int = 8, hidden: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.lstm1 = nn.LSTM(embed_dim, hidden, batch_first=True)
        self.lstm2 = nn.LSTM(hidden, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def _embed(self, x: torch.Tensor) -> torch.Tensor:
        if x.is_floating_point():
            # a float here means the ids went through an image pipeline (e.g. /255): fail loudly
            raise ValueError(f"shakespeare_lstm expects integer symbol ids (N, T), got {x.dtype}")
        return self.embed(x.long())

    def _lstm1(self, h: torch.Tensor) -> torch.Tensor:
        return self.lstm1(h)[0]

    def _lstm2(self, h: torch.Tensor) -> torch.Tensor:
        return self.lstm2(h)[0]

    def stage_fns(self) -> list[Stage]:
        return [self._embed, self._lstm1, self._lstm2]

    def head(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = h[:, -1]
        return self.fc(z), z


def shakespeare_lstm(
    input_shape,
    num_classes: int = 80,
    loss_on: str = "last",
    vocab_size: int = 80,
    embed_dim: int = 8,
    hidden: int = 256,
) -> nn.Module:
    if loss_on != "last":
        raise ValueError(f"loss_on must be 'last' (per-position loss 'all' is not supported), got {loss_on!r}")
    return ShakespeareLSTM(num_classes, vocab_size, embed_dim, hidden)
