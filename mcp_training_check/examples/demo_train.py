"""A real small training run for the demo: a two-layer numpy MLP on a synthetic 4-class problem.

Logs through `wandb` in offline mode (no account, no network): train/loss, train/grad_norm,
train/lr every step, eval/loss and eval/acc every ``--eval-every`` steps. At ``--fault-step`` the
learning rate jumps by ``--fault-lr-factor`` (a real fault: a bad config reload, a resumed schedule),
and training diverges. Writes its pid to ``--pid-file`` so `training-check stop` can stop it.

    python -m mcp_training_check.examples.demo_train --dir DIR --steps 3000 --fault-step 1500
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

CLASSES = 4
FEATURES = 16
HIDDEN = 64


CENTER_SPREAD = 0.7
LABEL_NOISE = 0.15


def make_data(rng: np.random.Generator, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping Gaussian blobs with 15 % label noise, so the loss settles well above zero
    (around 0.6-0.9) the way a real task's does, instead of memorising to 1e-5."""
    centers = rng.normal(0, CENTER_SPREAD, size=(CLASSES, FEATURES))
    labels = rng.integers(0, CLASSES, size=samples)
    features = centers[labels] + rng.normal(0, 1.0, size=(samples, FEATURES))
    noisy = rng.random(samples) < LABEL_NOISE
    labels = np.where(noisy, rng.integers(0, CLASSES, size=samples), labels)
    return features.astype(np.float64), labels


def init_params(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "w1": rng.normal(0, math.sqrt(2 / FEATURES), size=(FEATURES, HIDDEN)),
        "b1": np.zeros(HIDDEN),
        "w2": rng.normal(0, math.sqrt(1 / HIDDEN), size=(HIDDEN, CLASSES)),
        "b2": np.zeros(CLASSES),
    }


def forward_backward(
    params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray
) -> tuple[float, dict[str, np.ndarray], np.ndarray]:
    """Cross-entropy loss and gradients. The log-softmax is written naively on purpose: it overflows
    to Inf/NaN once the weights blow up, exactly like hand-written training code does."""
    hidden = np.maximum(0, x @ params["w1"] + params["b1"])
    logits = hidden @ params["w2"] + params["b2"]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        exp = np.exp(logits)
        probs = exp / exp.sum(axis=1, keepdims=True)
        loss = float(-np.mean(np.log(probs[np.arange(len(y)), y])))
    dlogits = probs.copy()
    dlogits[np.arange(len(y)), y] -= 1
    dlogits /= len(y)
    dhidden = (dlogits @ params["w2"].T) * (hidden > 0)
    grads = {
        "w2": hidden.T @ dlogits,
        "b2": dlogits.sum(axis=0),
        "w1": x.T @ dhidden,
        "b1": dhidden.sum(axis=0),
    }
    return loss, grads, logits


def lr_at(step: int, *, peak: float, warmup: int, total: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def evaluate(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    loss, _, logits = forward_backward(params, x, y)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y))
    return loss, accuracy


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="directory for wandb/ and the pid file")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--fault-step", type=int, default=1500, help="-1 for a healthy run")
    parser.add_argument("--fault-lr-factor", type=float, default=300.0)
    parser.add_argument("--peak-lr", type=float, default=0.05)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--steps-per-second", type=float, default=100.0, help="0 for as fast as possible")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    import wandb

    workdir = Path(args.dir)
    (workdir / "train.pid").write_text(f"{os.getpid()}\n")
    rng = np.random.default_rng(args.seed)
    x_train, y_train = make_data(rng, 4096)
    x_eval, y_eval = x_train[:512] + rng.normal(0, 0.3, size=(512, FEATURES)), y_train[:512]
    params = init_params(rng)
    config = {
        "learning_rate": args.peak_lr,
        "warmup_steps": args.warmup,
        "total_steps": args.steps,
        "lr_scheduler_type": "cosine",
        "batch_size": 32,
        "optimizer": "sgd",
    }
    run = wandb.init(mode="offline", dir=str(workdir), project="training-check-demo", config=config)
    delay = 1.0 / args.steps_per_second if args.steps_per_second > 0 else 0.0
    for step in range(args.steps):
        lr = lr_at(step, peak=args.peak_lr, warmup=args.warmup, total=args.steps)
        if 0 <= args.fault_step <= step:
            lr *= args.fault_lr_factor
        batch = rng.integers(0, len(y_train), size=32)
        loss, grads, _ = forward_backward(params, x_train[batch], y_train[batch])
        grad_norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
        for name, grad in grads.items():
            params[name] -= lr * grad
        row = {"train/loss": loss, "train/grad_norm": grad_norm, "train/lr": lr}
        if step % args.eval_every == 0:
            row["eval/loss"], row["eval/acc"] = evaluate(params, x_eval, y_eval)
        run.log(row, step=step)
        if delay:
            time.sleep(delay)
    run.finish()


if __name__ == "__main__":
    main()
