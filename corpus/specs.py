"""The runs of the corpus: one RunSpec per run, with its label, fault and the step the fault began.

Seeds are unique per run; ``fault_step`` is the first step whose update (or data) carries the fault.
"""

from __future__ import annotations

from corpus.train import RunSpec

UNSAFE, FP16 = {"softmax": "unsafe"}, {"precision": "fp16"}
UNSAFE_TANH = {**UNSAFE, "act": "tanh"}  # tanh units cannot die, so the logits keep growing


def _healthy() -> list[RunSpec]:
    h = "healthy"
    return [
        RunSpec("h01", "mlp", "adamw", "cosine", h, "none", 4000, 3e-3, 11, warmup=200, eval_every=200),
        RunSpec("h02", "charlm", "adamw", "cosine", h, "none", 5000, 3e-3, 12, warmup=250, eval_every=250),
        RunSpec("h03", "charlm", "adam", "cosine", h, "none", 3000, 2e-3, 13, warmup=100, max_grad_norm=None),
        RunSpec("h04", "mlp", "sgd", "step", h, "none", 3000, 0.05, 14),
        RunSpec("h05", "charlm", "sgd", "step", h, "none", 4000, 0.2, 15, eval_every=200),
        RunSpec("h06", "mlp", "sgd", "sgdr", h, "none", 4000, 0.05, 16),
        RunSpec("h07", "charlm", "adamw", "sgdr", h, "none", 4000, 3e-3, 17, warmup=100, eval_every=200),
        RunSpec("h08", "logreg", "sgd", "constant", h, "none", 2000, 0.05, 18, eval_every=50),
        RunSpec("h09", "charlm", "adam", "constant", h, "none", 3000, 1e-3, 19, eval_every=150),
        RunSpec("h10", "mlp", "sgd", "cosine", h, "small_batch", 3000, 0.01, 20, batch_size=4),
        RunSpec("h11", "charlm", "adamw", "linear", h, "small_batch", 3000, 1e-3, 21, batch_size=8,
                eval_every=150),
        RunSpec("h12", "mlp", "adamw", "cosine", h, "grad_accum", 2000, 3e-3, 22, warmup=100, batch_size=16,
                grad_accum=4),
        RunSpec("h13", "charlm", "sgd", "step", h, "grad_accum", 2000, 0.2, 23, batch_size=16, grad_accum=4),
        RunSpec("h14", "mlp", "sgd", "cosine", h, "bad_batch_spike", 3000, 0.05, 24, event_step=1200,
                events={"bad_batch": [1200, "scale"]}),
        RunSpec("h15", "charlm", "adamw", "cosine", h, "bad_batch_spike", 3000, 2e-3, 25, warmup=100,
                event_step=1500, eval_every=150, events={"bad_batch": [1500, "shuffle"]}),
        RunSpec("h16", "mlp", "adamw", "cosine", h, "noisy_shard", 3000, 3e-3, 26, event_step=1000,
                events={"noisy_shard": [1000, 300, 0.6]}),
        RunSpec("h17", "charlm", "sgd", "cosine", h, "noisy_shard", 4000, 0.2, 27, event_step=1500,
                eval_every=200, events={"noisy_shard": [1500, 400, 0.6]}),
        RunSpec("h18", "mlp", "sgd", "cosine", h, "clipping_active", 3000, 0.1, 28, max_grad_norm=0.25),
        RunSpec("h19", "charlm", "sgd", "cosine", h, "clipping_active", 3000, 0.5, 29, max_grad_norm=0.5,
                eval_every=150),
    ]


def _bad_nan() -> list[RunSpec]:
    b = "bad"
    return [
        RunSpec("b01", "mlp", "sgd", "cosine", b, "nan_overflow", 3000, 0.05, 31, fault_step=1200,
                max_grad_norm=None, arch=UNSAFE_TANH, events={"lr_mult": [1200, 100, None]}),
        RunSpec("b02", "charlm", "sgd", "constant", b, "nan_overflow", 4000, 0.1, 32, fault_step=2000,
                max_grad_norm=None, eval_every=200, arch=UNSAFE, events={"lr_mult": [2000, 50, None]}),
        RunSpec("b03", "mlp", "sgd", "constant", b, "fp16_overflow", 3000, 0.05, 33, fault_step=1000,
                max_grad_norm=None, arch=FP16, events={"lr_ramp": [1000, 0.02]}),
        RunSpec("b04", "mlp", "adam", "constant", b, "fp16_overflow", 4000, 2e-3, 34, fault_step=1500,
                max_grad_norm=None, eval_every=150, arch={**FP16, "act": "tanh"},
                events={"lr_ramp": [1500, 0.02]}),
    ]


def _bad_divergence() -> list[RunSpec]:
    b = "bad"
    return [
        RunSpec("b05", "charlm", "sgd", "constant", b, "loss_blowup", 3500, 0.1, 35, fault_step=1500,
                max_grad_norm=None, events={"lr_mult": [1500, 50, None]}),
        RunSpec("b06", "mlp", "sgd", "constant", b, "loss_blowup", 3000, 0.02, 36, fault_step=1000,
                max_grad_norm=None, events={"lr_ramp": [1000, 0.01]}),
        RunSpec("b07", "mlp", "adamw", "cosine", b, "lr_jump_divergence", 4000, 2e-3, 37, warmup=200,
                fault_step=1500, events={"lr_mult": [1500, 50, None]}),
        RunSpec("b08", "charlm", "adamw", "constant", b, "lr_jump_divergence", 4000, 2e-3, 38,
                fault_step=2000, eval_every=200, events={"lr_mult": [2000, 50, None]}),
        RunSpec("b09", "mlp", "adam", "constant", b, "lr_jump_divergence", 2500, 2e-3, 39, fault_step=1000,
                eval_every=50, events={"lr_mult": [1000, 50, None]}),
        RunSpec("b10", "mlp", "sgd", "constant", b, "dead_relu_collapse", 3000, 0.05, 40, fault_step=1200,
                max_grad_norm=None, events={"lr_mult": [1200, 200, 3]}),
        RunSpec("b11", "mlp", "sgd", "cosine", b, "dead_relu_collapse", 4000, 0.05, 41, fault_step=2000,
                max_grad_norm=None, eval_every=200, events={"lr_mult": [2000, 300, 3]}),
    ]


def _bad_eval_and_hf() -> list[RunSpec]:
    b = "bad"
    return [
        RunSpec("b12", "mlp", "adamw", "cosine", b, "eval_collapse", 3000, 3e-3, 42, fault_step=1500,
                events={"eval_misaligned": 1500}),
        RunSpec("b13", "charlm", "adamw", "cosine", b, "eval_collapse", 3000, 2e-3, 43, fault_step=1200,
                eval_every=150, events={"blank_inputs": 1200}),
        RunSpec("b14", "mlp", "sgd", "step", b, "eval_collapse", 4000, 0.05, 44, fault_step=2000,
                eval_every=250, events={"blank_inputs": 2000}),
        RunSpec("b15", "charlm", "sgd", "constant", b, "hf_nan_filtered", 3000, 0.1, 45, fault_step=1000,
                grad_accum=4, max_grad_norm=None, hf_logging=True, amp_skip=True, arch=UNSAFE,
                events={"lr_mult": [1000, 30, None]}),
        RunSpec("b16", "charlm", "sgd", "cosine", b, "hf_nan_filtered", 3000, 0.1, 46, fault_step=1500,
                grad_accum=4, max_grad_norm=None, hf_logging=True, amp_skip=True, arch=UNSAFE,
                eval_every=150, events={"lr_mult": [1500, 40, None]}),
        RunSpec("b17", "charlm", "sgd", "constant", b, "hf_zero_loss", 3000, 0.1, 47, fault_step=1200,
                max_grad_norm=None, hf_logging=True, arch=UNSAFE, events={"lr_mult": [1200, 30, None]}),
        RunSpec("b18", "mlp", "sgd", "cosine", b, "hf_zero_loss", 3000, 0.05, 48, fault_step=1000,
                max_grad_norm=None, hf_logging=True, arch=UNSAFE_TANH, events={"lr_mult": [1000, 100, None]}),
        RunSpec("b19", "charlm", "adamw", "cosine", b, "hf_zero_loss", 3000, 2e-3, 49, warmup=100,
                fault_step=1500, hf_logging=True, events={"mask_labels": 1500}),
    ]


def _ambiguous() -> list[RunSpec]:
    a = "ambiguous"
    return [
        RunSpec("a01", "mlp", "sgd", "constant", a, "lr_too_small", 3000, 1e-5, 51, fault_step=0),
        RunSpec("a02", "charlm", "adamw", "constant", a, "lr_too_small", 2000, 1e-6, 52, fault_step=0),
        RunSpec("a03", "mlp", "sgd", "constant", a, "vanishing_gradients", 2000, 0.05, 53, fault_step=0,
                arch={"act": "sigmoid", "hidden": (32,) * 10, "init_scale": 0.5}),
        RunSpec("a04", "mlp", "adam", "constant", a, "vanishing_gradients", 2000, 1e-3, 54, fault_step=0,
                arch={"act": "tanh", "hidden": (32,) * 6, "init_scale": 0.05}),
        RunSpec("a05", "mlp", "adamw", "cosine", a, "dead_lr", 4000, 3e-3, 55, warmup=100, fault_step=1200,
                schedule_end=1200, eval_every=200),
        RunSpec("a06", "charlm", "sgd", "linear", a, "dead_lr", 3000, 0.2, 56, fault_step=900,
                schedule_end=900, eval_every=150),
        RunSpec("a07", "mlp", "adam", "constant", a, "overfitting", 2000, 2e-3, 57, train_subset=1000,
                max_grad_norm=None, eval_every=50, arch={"hidden": (128, 128)}),
        RunSpec("a08", "charlm", "adam", "constant", a, "overfitting", 3000, 2e-3, 58, train_subset=800,
                max_grad_norm=None),
        RunSpec("a09", "charlm", "adamw", "constant", a, "stuck_loader", 2500, 2e-3, 59, fault_step=1000,
                events={"stuck": 1000}),
        RunSpec("a10", "mlp", "sgd", "cosine", a, "stuck_loader", 3000, 0.05, 60, fault_step=1500,
                events={"stuck": 1500}),
        RunSpec("a11", "mlp", "adamw", "cosine", a, "below_baseline", 3000, 3e-3, 61, warmup=100,
                baseline="late"),
        RunSpec("a12", "charlm", "sgd", "cosine", a, "below_baseline", 4000, 0.2, 62, eval_every=200,
                baseline="never"),
    ]


SPECS: list[RunSpec] = [*_healthy(), *_bad_nan(), *_bad_divergence(), *_bad_eval_and_hf(), *_ambiguous()]
BY_ID: dict[str, RunSpec] = {s.id: s for s in SPECS}
