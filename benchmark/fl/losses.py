"""Small tensor formulas shared by several client terms (one place for each)."""

from __future__ import annotations

from benchmark.lazy import F, torch


def sq_dist(w: torch.Tensor, anchor: torch.Tensor) -> torch.Tensor:
    """‖w − anchor‖² (anchor carries no gradient)."""
    return (w - anchor.detach()).pow(2).sum()


def kl_softmax(target_logits: torch.Tensor, logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """KL(softmax(target/T) ‖ softmax(logits/T)), summed over classes, averaged over the batch."""
    log_p = F.log_softmax(target_logits / temperature, dim=1)
    log_q = F.log_softmax(logits / temperature, dim=1)
    return (log_p.exp() * (log_p - log_q)).sum(1).mean()


def state_or_zeros(state: dict, key: str, like: torch.Tensor) -> torch.Tensor:
    """A client's state entry, or zeros for a client that has none yet (empty state)."""
    value = state.get(key)
    return torch.zeros_like(like) if value is None else value
