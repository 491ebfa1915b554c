"""Synthetic but learnable data sets, generated from seeds (no downloads).

* ``teacher``: 24-d Gaussian inputs labelled by a random tanh "teacher" network, 10 classes, 8 % label noise.
* ``text``: a word-level Markov "language" spelled out in characters, for a char-level language model.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_eval: np.ndarray
    y_eval: np.ndarray
    n_classes: int
    vocab: int = 0  # > 0: inputs are token ids of a context window

    @property
    def n_inputs(self) -> int:
        return self.x_train.shape[1]


@lru_cache(maxsize=8)
def teacher(seed: int, n_train: int = 20000, n_eval: int = 2000) -> Dataset:
    rng = np.random.default_rng(1000 + seed)
    d, h, c = 24, 48, 10
    w1 = rng.normal(0, 1 / np.sqrt(d), (d, h))
    w2 = rng.normal(0, 3 / np.sqrt(h), (h, c))
    x = rng.normal(0, 1, (n_train + n_eval, d))
    y = np.argmax(np.tanh(x @ w1) @ w2, axis=1)
    flip = rng.random(len(y)) < 0.08
    y[flip] = rng.integers(0, c, flip.sum())
    x = x.astype(np.float32)
    return Dataset(x[:n_train], y[:n_train], x[n_train:], y[n_train:], c)


def _lexicon(rng: np.random.Generator, n_words: int) -> list[str]:
    cons, vows = "bcdfghjklmnprstvwz", "aeiou"
    words: set[str] = set()
    while len(words) < n_words:
        n_syl = int(rng.integers(1, 4))
        words.add("".join(rng.choice(list(cons)) + rng.choice(list(vows)) for _ in range(n_syl)))
    return sorted(words)


def _markov_text(rng: np.random.Generator, words: list[str], n_words: int) -> str:
    n = len(words)
    succ = rng.integers(0, n, (n, 6))
    probs = rng.dirichlet(np.full(6, 0.5), n)
    out, w = [], 0
    for i in range(n_words):
        out.append(words[w])
        if i % 12 == 11:
            out.append(".")
        w = int(succ[w, rng.choice(6, p=probs[w])]) if rng.random() > 0.1 else int(rng.integers(0, n))
    return " ".join(out)


@lru_cache(maxsize=4)
def text(seed: int, context: int = 6, n_eval: int = 3000) -> Dataset:
    rng = np.random.default_rng(2000 + seed)
    corpus = _markov_text(rng, _lexicon(rng, 120), 30000)
    chars = sorted(set(corpus))
    ids = np.array([chars.index(ch) for ch in corpus], dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(ids, context + 1)
    x, y = windows[:, :context].copy(), windows[:, context].copy()
    split = len(y) - 4 * n_eval
    return Dataset(x[:split], y[:split], x[split::4], y[split::4], len(chars), vocab=len(chars))
