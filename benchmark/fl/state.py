"""Per-client persistent state (FedDyn h_i, SCAFFOLD c_i, MOON's previous model, ...).

Kept off the training device: a client's tensors are moved to the device when it trains and
back after. A client never seen before (dynamic pools) starts from empty state.
"""

from __future__ import annotations

import torch


class ClientStateStore:
    """client id -> {name: tensor}, held in host memory."""

    def __init__(self):
        self._data: dict[int, dict[str, torch.Tensor]] = {}

    def get(self, client: int, device) -> dict[str, torch.Tensor]:
        return {k: v.to(device) for k, v in self._data.get(client, {}).items()}

    def put(self, client: int, state: dict[str, torch.Tensor]) -> None:
        if state:
            self._data[client] = {k: v.detach().to("cpu", copy=True) for k, v in state.items()}

    def __contains__(self, client: int) -> bool:
        return client in self._data

    def __len__(self) -> int:
        return len(self._data)

    def state_dict(self) -> dict:
        return {str(k): v for k, v in self._data.items()}

    def load_state_dict(self, data: dict) -> None:
        self._data = {int(k): dict(v) for k, v in data.items()}
