"""Independent numpy re-statement of ALGORITHMS.md's local step for multinomial logistic
regression, used as the hand computation that the engine is checked against."""

from __future__ import annotations

import numpy as np


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ce_grad(W: np.ndarray, b: np.ndarray, X: np.ndarray, y: np.ndarray):
    """Mean cross-entropy gradient of logits X W^T + b."""
    P = softmax(X @ W.T + b)
    P[np.arange(len(y)), y] -= 1.0
    return P.T @ X / len(y), P.mean(axis=0)


def clip(gW, gb, max_norm):
    norm = np.sqrt((gW**2).sum() + (gb**2).sum())
    scale = min(1.0, max_norm / (norm + 1e-6))
    return gW * scale, gb * scale


def local_sgd(W, b, X, y, steps, lr, wd=0.0, clip_norm=None, prox_mu=0.0, anchor=None):
    """K full-batch steps: g = clip(∇(CE + (μ/2)‖w − anchor‖²)) + wd·w ; w ← w − lr·g."""
    W, b = W.copy(), b.copy()
    aW, ab = anchor if anchor is not None else (W.copy(), b.copy())
    for _ in range(steps):
        gW, gb = ce_grad(W, b, X, y)
        gW, gb = gW + prox_mu * (W - aW), gb + prox_mu * (b - ab)
        if clip_norm is not None:
            gW, gb = clip(gW, gb, clip_norm)
        W, b = W - lr * (gW + wd * W), b - lr * (gb + wd * b)
    return W, b
