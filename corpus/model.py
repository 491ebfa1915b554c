"""An MLP in numpy (float32), optionally with a token-embedding front end (the char-level LM).

``precision="fp16"`` rounds every layer output to float16 (as autocast would), so large activations
overflow to inf for real. ``softmax="unsafe"`` is a hand-written softmax without max subtraction,
which overflows (exp > 3.4e38) once logits pass ~88. Labels equal to ``IGNORE`` are masked out of the
loss (mean over the remaining labels, so an all-masked batch gives 0/0 = NaN, as in PyTorch).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IGNORE = -100
ACTS = {
    "relu": (lambda z: np.maximum(z, 0), lambda a: (a > 0).astype(np.float32)),
    "tanh": (np.tanh, lambda a: 1 - a * a),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda a: a * (1 - a)),
}


@dataclass(frozen=True)
class Arch:
    n_inputs: int
    n_classes: int
    hidden: tuple[int, ...] = (64, 64)
    act: str = "relu"
    vocab: int = 0
    embed: int = 10
    init_scale: float = 1.0
    precision: str = "fp32"
    softmax: str = "stable"


def init(arch: Arch, rng: np.random.Generator) -> dict[str, np.ndarray]:
    params: dict[str, np.ndarray] = {}
    width = arch.n_inputs
    if arch.vocab:
        params["E"] = rng.normal(0, 1, (arch.vocab, arch.embed)).astype(np.float32)
        width = arch.n_inputs * arch.embed
    gain = 2.0 if arch.act == "relu" else 1.0
    for i, h in enumerate((*arch.hidden, arch.n_classes)):
        scale = arch.init_scale * np.sqrt(gain / width)
        params[f"W{i}"] = rng.normal(0, scale, (width, h)).astype(np.float32)
        params[f"b{i}"] = np.zeros(h, np.float32)
        width = h
    return params


def _cast(z: np.ndarray, arch: Arch) -> np.ndarray:
    return z.astype(np.float16).astype(np.float32) if arch.precision == "fp16" else z


def forward(params: dict, x: np.ndarray, arch: Arch) -> tuple[np.ndarray, list[np.ndarray]]:
    a = params["E"][x].reshape(len(x), -1) if arch.vocab else x
    acts = [a]
    fn = ACTS[arch.act][0]
    for i in range(len(arch.hidden)):
        a = _cast(fn(_cast(a @ params[f"W{i}"] + params[f"b{i}"], arch)), arch)
        acts.append(a)
    n = len(arch.hidden)
    return _cast(a @ params[f"W{n}"] + params[f"b{n}"], arch), acts


def softmax_xent(logits: np.ndarray, y: np.ndarray, arch: Arch) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean cross-entropy over unmasked rows, its gradient w.r.t. the logits, and the per-row loss."""
    if arch.softmax == "unsafe":
        e = np.exp(logits)
        p = e / e.sum(axis=1, keepdims=True)
        logp = np.log(p)
    else:
        z = logits - logits.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        p = np.exp(logp)
    valid = y != IGNORE
    rows = -logp[np.arange(len(y)), np.where(valid, y, 0)]
    count = np.float32(valid.sum())
    loss = float(np.where(valid, rows, 0).sum() / count)
    grad = p.copy()
    grad[np.arange(len(y)), np.where(valid, y, 0)] -= 1
    return loss, grad * valid[:, None] / count, rows


def loss_and_grads(params: dict, x: np.ndarray, y: np.ndarray, arch: Arch) -> tuple[float, dict]:
    logits, acts = forward(params, x, arch)
    loss, d, _ = softmax_xent(logits, y, arch)
    grads: dict[str, np.ndarray] = {}
    deriv = ACTS[arch.act][1]
    for i in range(len(arch.hidden), -1, -1):
        grads[f"W{i}"] = acts[i].T @ d
        grads[f"b{i}"] = d.sum(axis=0)
        d = d @ params[f"W{i}"].T
        if i > 0:
            d = d * deriv(acts[i])
    if arch.vocab:
        g = np.zeros_like(params["E"])
        np.add.at(g, x, d.reshape(x.shape[0], x.shape[1], -1))
        grads["E"] = g
    return loss, grads


def evaluate(params: dict, x: np.ndarray, y: np.ndarray, arch: Arch) -> tuple[float, float]:
    logits, _ = forward(params, x, arch)
    loss, _, _ = softmax_xent(logits, y, arch)
    return loss, float((logits.argmax(axis=1) == y).mean())
