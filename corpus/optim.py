"""Hand-written optimizers (SGD with momentum, Adam, AdamW) and learning-rate schedules."""

from __future__ import annotations

import math

import numpy as np


class SGD:
    def __init__(self, params: dict, momentum: float = 0.9, weight_decay: float = 0.0):
        self.momentum, self.wd = momentum, weight_decay
        self.buf = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict, lr: float) -> None:
        for k, g in grads.items():
            g = g + self.wd * params[k] if self.wd else g
            self.buf[k] = self.momentum * self.buf[k] + g
            params[k] -= np.float32(lr) * self.buf[k]


class Adam:
    """Adam; with ``decoupled=True`` it is AdamW (weight decay applied to the weights, not the gradient)."""

    def __init__(self, params: dict, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False):
        self.b1, self.b2 = betas
        self.eps, self.wd, self.decoupled, self.t = eps, weight_decay, decoupled, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict, lr: float) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for k, g in grads.items():
            if self.wd and not self.decoupled:
                g = g + self.wd * params[k]
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            if self.wd and self.decoupled:
                params[k] *= np.float32(1 - lr * self.wd)
            update = (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)
            params[k] -= np.float32(lr) * update.astype(np.float32)


def make_optimizer(name: str, params: dict):
    if name == "sgd":
        return SGD(params, momentum=0.9, weight_decay=1e-4)
    if name == "adam":
        return Adam(params)
    if name == "adamw":
        return Adam(params, weight_decay=0.01, decoupled=True)
    raise ValueError(name)


def schedule_lr(kind: str, step: int, base: float, warmup: int, total: int, end: int | None = None) -> float:
    """LR at 1-based ``step``. ``end`` < total makes the schedule finish early (LR 0 afterwards)."""
    end = end or total
    if warmup and step <= warmup:
        return base * step / warmup
    frac = min(1.0, (step - warmup) / max(1, end - warmup))
    if kind == "constant":
        return base
    if kind in ("cosine", "linear"):
        return base * (0.5 * (1 + math.cos(math.pi * frac)) if kind == "cosine" else 1 - frac)
    if kind == "step":
        return base * 0.1 ** int(frac * 3 - 1e-9)
    if kind == "sgdr":
        cycle = max(1, (end - warmup) // 4)
        pos = ((step - warmup) % cycle) / cycle
        return base * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * pos)))
    raise ValueError(kind)
