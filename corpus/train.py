"""The training loop: real minibatch gradient descent with optional, real faults injected at a step.

A run is described by a :class:`RunSpec`; :func:`run` trains it and returns the corpus record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from corpus import data, model, optim

BAD_TAIL = 800  # steps recorded after a bad run's fault
NAN_PATIENCE = 50  # stop recording after this many consecutive non-finite steps
METRICS = ("train/loss", "train/grad_norm", "train/lr", "eval/loss", "eval/acc")


@dataclass(frozen=True)
class RunSpec:
    id: str
    family: str  # mlp | logreg | charlm
    optimizer: str  # sgd | adam | adamw
    schedule: str  # constant | cosine | linear | step | sgdr
    label: str  # healthy | bad | ambiguous
    fault: str
    total_steps: int
    lr: float
    seed: int
    warmup: int = 0
    batch_size: int = 32
    grad_accum: int = 1
    max_grad_norm: float | None = 1.0
    eval_every: int = 100
    fault_step: int | None = None
    event_step: int | None = None  # healthy runs: where a transient disturbance was injected
    schedule_end: int | None = None
    train_subset: int | None = None
    hf_logging: bool = False  # log train/loss as the HF Trainer does (logging_nan_inf_filter=True)
    amp_skip: bool = False  # skip the optimizer step on non-finite gradients (like torch GradScaler)
    baseline: str | None = None  # "late" | "never": derive an eval/acc baseline from the run
    arch: dict = field(default_factory=dict)
    events: dict = field(default_factory=dict)


def dataset(spec: RunSpec) -> data.Dataset:
    return data.text(spec.seed % 2) if spec.family == "charlm" else data.teacher(spec.seed % 3)


def make_arch(spec: RunSpec, ds: data.Dataset) -> model.Arch:
    defaults = {"charlm": {"hidden": (128,), "act": "tanh"}, "logreg": {"hidden": ()}}.get(spec.family, {})
    kw = {**defaults, **spec.arch}
    return model.Arch(n_inputs=ds.n_inputs, n_classes=ds.n_classes, vocab=ds.vocab, **kw)


def lr_at(spec: RunSpec, step: int) -> float:
    lr = optim.schedule_lr(spec.schedule, step, spec.lr, spec.warmup, spec.total_steps, spec.schedule_end)
    ev = spec.events
    if "lr_mult" in ev:
        start, mult, length = ev["lr_mult"]
        if start <= step < start + (length or 10**9):
            lr *= mult
    if "lr_ramp" in ev and step >= ev["lr_ramp"][0]:
        lr *= math.exp(ev["lr_ramp"][1] * (step - ev["lr_ramp"][0]))
    return lr


class Batches:
    """Minibatches drawn with replacement, plus the data faults of ``spec.events``."""

    def __init__(self, spec: RunSpec, ds: data.Dataset):
        self.spec, self.ds = spec, ds
        self.rng = np.random.default_rng([spec.seed, 1])
        self.n = spec.train_subset or len(ds.y_train)
        self.stuck: np.ndarray | None = None

    def get(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        ev = self.spec.events
        idx = self.rng.integers(0, self.n, self.spec.batch_size)
        if "stuck" in ev and step >= ev["stuck"]:
            self.stuck = idx if self.stuck is None else self.stuck
            idx = self.stuck
        x, y = self.ds.x_train[idx], self.ds.y_train[idx].copy()
        return self._corrupt(step, x, y)

    def _corrupt(self, step: int, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ev = self.spec.events
        if ev.get("bad_batch", (None,))[0] == step:
            if ev["bad_batch"][1] == "scale":
                x = x * np.float32(50)
            else:
                y = self.rng.permutation(self.ds.n_classes)[y]
        if "noisy_shard" in ev:
            start, length, frac = ev["noisy_shard"]
            if start <= step < start + length:
                noisy = self.rng.random(len(y)) < frac
                y[noisy] = self.rng.integers(0, self.ds.n_classes, int(noisy.sum()))
        if "mask_labels" in ev and step >= ev["mask_labels"]:
            y[:] = model.IGNORE
        if "blank_inputs" in ev and step >= ev["blank_inputs"]:
            x = np.zeros_like(x)
        return x, y

    def eval_set(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        ev, x, y = self.spec.events, self.ds.x_eval, self.ds.y_eval
        if "eval_misaligned" in ev and step >= ev["eval_misaligned"]:
            y = np.roll(y, 1)
        if "blank_inputs" in ev and step >= ev["blank_inputs"]:
            x = np.zeros_like(x)
        return x, y


def global_norm(grads: dict) -> float:
    return math.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values()))


class HFLoss:
    """``train/loss`` as transformers.Trainer logs it with logging_steps=1 and logging_nan_inf_filter=True:
    a NaN/Inf micro-batch loss is replaced by the running sum of the window so far (0 if it is the first),
    and the logged value is rounded to 4 decimals."""

    def __init__(self) -> None:
        self.tr = 0.0

    def add(self, micro_loss: float, accum: int) -> None:
        self.tr += self.tr if not math.isfinite(micro_loss) else micro_loss / accum

    def log(self) -> float:
        value, self.tr = round(self.tr, 4), 0.0
        return value


class Trainer:
    def __init__(self, spec: RunSpec):
        self.spec = spec
        self.ds = dataset(spec)
        self.arch = make_arch(spec, self.ds)
        self.params = model.init(self.arch, np.random.default_rng([spec.seed, 0]))
        self.opt = optim.make_optimizer(spec.optimizer, self.params)
        self.batches = Batches(spec, self.ds)
        self.hf = HFLoss() if spec.hf_logging else None

    def step(self, step: int, lr: float) -> tuple[float, float]:
        """One optimizer step over ``grad_accum`` micro-batches; returns (logged loss, grad norm)."""
        accum, total, losses = self.spec.grad_accum, None, []
        for _ in range(accum):
            x, y = self.batches.get(step)
            loss, grads = model.loss_and_grads(self.params, x, y, self.arch)
            losses.append(loss)
            if self.hf:
                self.hf.add(loss, accum)
            total = grads if total is None else {k: total[k] + g for k, g in grads.items()}
        grads = {k: g / np.float32(accum) for k, g in total.items()}
        norm = global_norm(grads)
        if math.isfinite(norm) or not self.spec.amp_skip:
            clip = self.spec.max_grad_norm
            if clip and norm > clip:
                grads = {k: g * np.float32(clip / norm) for k, g in grads.items()}
            self.opt.step(self.params, grads, lr)
        return (self.hf.log() if self.hf else float(np.mean(losses))), norm

    def evaluate(self, step: int) -> tuple[float, float]:
        return model.evaluate(self.params, *self.batches.eval_set(step), self.arch)


def last_step(spec: RunSpec) -> int:
    if spec.label == "bad" and spec.fault_step is not None:
        return min(spec.total_steps, spec.fault_step + BAD_TAIL)
    return spec.total_steps


def train(spec: RunSpec) -> dict[str, list]:
    """Train ``spec`` and return its metric series ``{name: [[step, value], ...]}`` (unrounded)."""
    tr = Trainer(spec)
    series: dict[str, list] = {k: [] for k in METRICS}
    streak = 0
    with np.errstate(all="ignore"):
        for step in range(1, last_step(spec) + 1):
            lr = lr_at(spec, step)
            loss, norm = tr.step(step, lr)
            for key, value in (("train/loss", loss), ("train/grad_norm", norm), ("train/lr", lr)):
                series[key].append([step, value])
            if step % spec.eval_every == 0:
                eval_loss, acc = tr.evaluate(step)
                series["eval/loss"].append([step, eval_loss])
                series["eval/acc"].append([step, acc])
            streak = 0 if math.isfinite(loss) and math.isfinite(norm) else streak + 1
            if streak >= NAN_PATIENCE:
                break
    return series
