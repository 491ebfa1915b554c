"""What each metric means to the judge, read from its name.

Names are split into tokens (on ``/ _ - . @``, spaces and lower→upper case changes) and matched token by
token, never by substring: ``eval_loss`` holds the token ``loss`` but also the split token ``eval``, so it
is an eval metric and not the training loss; ``train/loss_scale`` holds ``scale``, which turns a loss into
a setting. Anything not recognised is ``OTHER`` and is shown but never judged. Users correct a guess with
an override (``--role KEY=ROLE``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .errors import ConfigError
from .models import Direction, MetricRole

__all__ = [
    "OVERRIDE_ROLES",
    "RoleInfo",
    "adversarial_run",
    "assign_roles",
    "infer_role",
    "is_discriminator",
    "is_loss_like",
    "is_raw_perplexity",
    "log_scale_name",
    "logged_name",
    "parse_baselines",
    "parse_role_overrides",
    "primary_train_loss",
    "reconstruction_term",
]


@dataclass(frozen=True)
class RoleInfo:
    role: MetricRole
    direction: Direction


# Tokens that put a metric on a held-out split.
EVAL_SPLIT_TOKENS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test", "dev", "heldout"})
# Tokens that put a metric on the training split (they never make it an eval metric).
TRAIN_SPLIT_TOKENS = frozenset({"train", "training", "trn"})
# Quality words where smaller is better / larger is better. A token matches a word exactly or the word
# followed by digits (``rouge1``, ``bleu4``, ``top5``). ``ter`` is a token (wav2letter) or translation edit
# rate, lower like WER; ``hit``/``hits`` a recommender's hit rate (``hit_rate``, ``HR@10``'s ``hits@10``),
# the share of users whose item is in the top k, higher like recall. ``psnr`` and ``ssim`` score an image
# against its target (dB, a similarity in [0, 1]): higher is better, as a text-guided inpainting GAN's
# ``psnr_img_rec`` beside its losses (28 dB, corpus_real log-Inpainting-Evaluation-1). ``dice`` and ``jaccard``
# are a segmentation's overlap scores in [0, 1] (MONAI's validation ``dice``): higher is better; ``dice_loss``
# is 1 − Dice, a loss by its rightmost word. ``similarity`` scores an embedding against its target (a student
# distilled from BioCLIP logs ``val_cos``, its cosine similarity to the teacher: corpus_real log-hj-crazedcodernate-1);
# ``distance`` the other way round, lower is better.
LOWER_TOKENS = frozenset(
    {
        "loss", "ppl", "perplexity", "wer", "cer", "ter", "error", "err", "mse", "mae", "rmse", "nll", "bpb",
        "bpc", "fid", "distance",
    }
)  # fmt: skip
HIGHER_TOKENS = frozenset(
    {
        "acc", "accuracy", "bleu", "rouge", "rougel", "rougelsum", "f1", "map", "ap", "auc", "auroc",
        "precision", "recall", "exact", "em", "top", "score", "reward", "iou", "miou", "ndcg", "mrr", "pass",
        "hit", "hits", "psnr", "ssim", "dice", "jaccard", "similarity", "pearson", "spearman",
    }
)  # fmt: skip
# A regression error on the training split, the train loss of a run that logs no loss and no eval (`_error_terms`).
ERROR_TERM_TOKENS = frozenset({"mse", "mae", "rmse", "nll"})
# Words that turn a quality metric into a setting or a count of something else: ``loss_scale``,
# ``loss_weight``, ``lr_warmup_steps``, ``nan_loss_count``.
MODIFIER_TOKENS = frozenset(
    {
        "scale", "scaler", "scaling", "weight", "coef", "coeff", "lambda", "factor", "multiplier",
        "count", "num", "nan", "inf", "time", "runtime", "warmup", "std", "var", "variance",
    }
)  # fmt: skip
LR_TOKENS = frozenset({"lr"})
# ``lr0``, ``lr1``: one learning rate a parameter group (YOLOv5's ``x/lr0``); ``lr`` with digits only.
_LR_GROUP = re.compile(r"^lr\d+$")
# Ultralytics (YOLOv5, YOLOv8, YOLO11) logs its validation quality as ``metrics/mAP_0.5``,
# ``metrics/precision(B)``, ``metrics/recall(M)``: no split word, as its losses have (``val/box_loss``).
# Under this prefix a higher-is-better quality word without a train token is the eval metric.
EVAL_METRICS_PREFIX_TOKEN = "metrics"
# Detection's average precision is only ever computed on held-out images, and detectron2 (``bbox/AP50``)
# and MMDetection (``coco/bbox_mAP``) log it without a split word: mAP / AP without a train token is eval.
EVAL_ONLY_QUALITY = frozenset({"map", "ap"})
GRAD_TOKENS = frozenset({"grad", "gradient", "grads", "gradients"})
GRAD_NORM_SINGLE_TOKENS = frozenset({"gradnorm", "gnorm"})  # fairseq prints ``gnorm``
NORM_TOKEN = "norm"
# A norm printed beside the loss with no other word is the gradient's: llm.c's ``norm``, the clipped
# ``total_norm``. A parameter norm names itself (``param_norm``, ``weight_norm``).
TOTAL_NORM_NAMES = frozenset({"total_norm", "norm"})
# Whole names that abbreviate a split and a loss: llm.c's main.log prints ``trl`` (train loss) and ``tel``
# (its val loss, "test" in its logger).
ABBREVIATED_NAMES = {"trl": ("train", "loss"), "tel": ("test", "loss")}

# Tokens that qualify a train loss without changing what it is (for picking the primary one).
PLAIN_LOSS_QUALIFIERS = (
    TRAIN_SPLIT_TOKENS
    | {"step", "epoch", "mean", "avg", "average", "total", "overall", "main", "lm", "smoothed", "running"}
    | {"ema", "reduced", "global"}
)
PREFERRED_TRAIN_LOSS = ("loss", "train/loss", "train_loss", "training_loss", "loss/train")
# A GAN's reconstruction terms: CycleGAN's ``cycle_A`` and ``idt_A``, pix2pix's ``G_L1``, an
# autoencoder-GAN's ``rec``. Unlike its adversarial losses (``D_A``, ``G_A``: they swing around a balance
# point and do not fall in a healthy run, pytorch-CycleGAN-and-pix2pix's FAQ), these fall as the generator
# learns, so they stand in for the train loss. Their names hold no ``loss`` token, so they count as one
# only in a log that also holds a discriminator metric (DISCRIMINATOR_TOKENS: ``D_A``, ``loss_D``), where
# the words cannot mean a cycle count or an identity matrix.
# A perceptual term (pix2pixHD's ``G_VGG``: an L1 between VGG features of the output and the target) is a
# reconstruction term measured in feature space: it falls as the generator learns (pix2pixHD's G_VGG 5.9 ->
# 4.6 over a healthy run, corpus_real log-pix2pixHD-Owain-1).
RECONSTRUCTION_TOKENS = frozenset(
    {"cycle", "cyc", "idt", "identity", "rec", "recon", "reconstruction", "l1", "pixel"}
    | {"vgg", "perceptual", "percep"}
)
DISCRIMINATOR_TOKENS = frozenset({"d", "dis", "disc", "discriminator"})
# A name holding an adversarial word is an adversarial term whatever branch it is on: a text-guided
# inpainting GAN's ``gan_rec`` and ``dis_img_rec`` are the generator's and the discriminator's losses on its
# reconstruction branch (``_rec``), noisy around their balance for the whole run, not a reconstruction loss.
ADVERSARIAL_TOKENS = DISCRIMINATOR_TOKENS | {"gan", "adv", "adversarial"}
# A perplexity is e^(the per-token cross-entropy): the train loss in another unit, falling with it. Sockeye
# prints only ``perplexity`` and ``accuracy`` on its training lines (``train/perplexity`` 406 → 348 over 8
# logs: issue-sockeye-706, healthy, was unsure at every check for want of a train loss). With a train split
# word it is a train loss; a plain ``loss`` beside it still ranks first (`primary_train_loss`). The judge reads
# it as the cross-entropy it exponentiates, ln(perplexity) (`judge.scale`), unless its name says it is
# logged as its log already (MLPerf's ``eval_log_perplexity``: `LOG_TOKENS`).
PERPLEXITY_TOKENS = frozenset({"ppl", "perplexity"})
LOG_TOKENS = frozenset({"log", "ln"})
# The name under which the judge reads ln of a metric: its messages name the scale their numbers are on.
LOG_SCALE_PREFIX, LOG_SCALE_SUFFIX = "ln(", ")"

# Words that make a metric something other than a loss term: a count, a rate, a size or a timing. A train-split
# metric holding none of them (nor any other word with a role) may be an unnamed loss term (`_unnamed_terms`).
COUNTER_TOKENS = frozenset(
    {
        "epoch", "epochs", "step", "steps", "iter", "iters", "iteration", "iterations", "batch", "batches",
        "sample", "samples", "token", "tokens", "example", "examples", "images", "throughput", "speed", "sec",
        "seconds", "ms", "mem", "memory", "gpu", "data", "size", "len", "length", "progress", "percent",
    }
)  # fmt: skip

# Terms that do not fall in a healthy run, so an unnamed one is no train loss: a KL term grows as a VAE's
# posterior leaves its prior, an entropy falls or rises with the policy, a reward or return rises, a
# value estimate follows the returns.
NOT_FALLING_TOKENS = frozenset({"kl", "entropy", "ent", "reward", "return", "returns", "value", "advantage"})

# Every word a role list knows besides the split words: a train-split metric with none of them (and no
# direction) is an unnamed loss term (`_unnamed`).
_ROLE_WORDS = (
    MODIFIER_TOKENS | COUNTER_TOKENS | NOT_FALLING_TOKENS | GRAD_TOKENS | GRAD_NORM_SINGLE_TOKENS | {NORM_TOKEN}
)

OVERRIDE_ROLES: dict[str, RoleInfo | None] = {
    "train_loss": RoleInfo(MetricRole.TRAIN_LOSS, Direction.LOWER),
    "eval": None,  # eval with the direction read from the name (lower when the name says nothing)
    "eval_lower": RoleInfo(MetricRole.EVAL, Direction.LOWER),
    "eval_higher": RoleInfo(MetricRole.EVAL, Direction.HIGHER),
    "learning_rate": RoleInfo(MetricRole.LEARNING_RATE, Direction.LOWER),
    "grad_norm": RoleInfo(MetricRole.GRAD_NORM, Direction.LOWER),
    "other": None,  # other with the direction read from the name
    "ignore": None,  # dropped from the result
}

_SEPARATORS = re.compile(r"[/_\-.@\s:()\[\]]+")  # ``mAP50(B)``: ultralytics' box / mask suffix
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z])(?=[A-Z])")
_KNOWN_WHOLE = EVAL_SPLIT_TOKENS | TRAIN_SPLIT_TOKENS | LOWER_TOKENS | HIGHER_TOKENS | {"map", "lr"}
_OTHER_LOWER = RoleInfo(MetricRole.OTHER, Direction.LOWER)


@lru_cache(maxsize=4096)
def tokenize(name: str) -> tuple[str, ...]:
    """Lower-case tokens of a metric name; ``top-1`` and ``acc@1`` become ``top1`` and ``acc1``."""
    if name.lower() in ABBREVIATED_NAMES:
        return ABBREVIATED_NAMES[name.lower()]
    tokens: list[str] = []
    for piece in _SEPARATORS.split(name):
        if not piece:
            continue
        whole = piece.lower() in _KNOWN_WHOLE or piece.lower().rstrip("0123456789") in _KNOWN_WHOLE  # mAP50
        parts = [piece] if whole else _CAMEL_BOUNDARY.split(piece)
        for part in parts:
            low = part.lower()
            if low.isdigit() and tokens and tokens[-1] in {"top", "acc", "pass", "rouge", "bleu", "f"}:
                tokens[-1] += low
            else:
                tokens.append(low)
    return tuple(tokens)


def _quality(token: str) -> Direction | None:
    """Direction a quality token implies, or None when the token is not a quality word."""
    for candidate in (token, token.rstrip("0123456789")):
        if candidate in LOWER_TOKENS:
            return Direction.LOWER
        if candidate in HIGHER_TOKENS:
            return Direction.HIGHER
    return None


def _direction(tokens: tuple[str, ...]) -> Direction | None:
    """The rightmost quality word decides (``bleu_loss`` is a loss; the head noun comes last)."""
    for token in reversed(tokens):
        found = _quality(token)
        if found is not None:
            return found
    return None


def _is_grad_norm(name: str, tokens: tuple[str, ...]) -> bool:
    if name.lower() in TOTAL_NORM_NAMES or GRAD_NORM_SINGLE_TOKENS.intersection(tokens):
        return True
    return NORM_TOKEN in tokens and bool(GRAD_TOKENS.intersection(tokens))


def _is_learning_rate(tokens: tuple[str, ...]) -> bool:
    if LR_TOKENS.intersection(tokens) or any(_LR_GROUP.match(token) for token in tokens):
        return True
    return any(a == "learning" and b == "rate" for a, b in itertools.pairwise(tokens))


def _eval_without_split_word(tokens: tuple[str, ...], direction: Direction | None) -> bool:
    """YOLO's ``metrics/…``, detectron2's ``bbox/AP50``, MMDetection's ``coco/bbox_mAP``."""
    if direction is not Direction.HIGHER or TRAIN_SPLIT_TOKENS.intersection(tokens):
        return False
    average_precision = any(token.rstrip("0123456789") in EVAL_ONLY_QUALITY for token in tokens)
    return average_precision or tokens[:1] == (EVAL_METRICS_PREFIX_TOKEN,)


@lru_cache(maxsize=4096)
def infer_role(name: str) -> RoleInfo:
    """Role and better-direction of one metric, from its name alone (see the module docstring)."""
    tokens = tokenize(name)
    if MODIFIER_TOKENS.intersection(tokens):
        return RoleInfo(MetricRole.OTHER, _direction(tokens) or Direction.LOWER)
    if _is_grad_norm(name, tokens):
        return RoleInfo(MetricRole.GRAD_NORM, Direction.LOWER)
    if _is_learning_rate(tokens):
        return RoleInfo(MetricRole.LEARNING_RATE, Direction.LOWER)
    direction = _direction(tokens)
    if EVAL_SPLIT_TOKENS.intersection(tokens) or _eval_without_split_word(tokens, direction):
        return _OTHER_LOWER if direction is None else RoleInfo(MetricRole.EVAL, direction)
    if "loss" in tokens and direction is Direction.LOWER:
        return RoleInfo(MetricRole.TRAIN_LOSS, Direction.LOWER)
    if is_perplexity(name) and TRAIN_SPLIT_TOKENS.intersection(tokens):
        return RoleInfo(MetricRole.TRAIN_LOSS, Direction.LOWER)
    return RoleInfo(MetricRole.OTHER, direction or Direction.LOWER)


def is_perplexity(name: str) -> bool:
    """A perplexity (`PERPLEXITY_TOKENS`): e^loss, so ln of it is the loss's level (ln N at chance)."""
    return bool(PERPLEXITY_TOKENS.intersection(tokenize(name)))


def is_loss_like(name: str) -> bool:
    """A loss or a perplexity by its name (``eval/loss``, ``val_ppl``): a measure of fit, not an eval score
    such as an accuracy, a WER or an F1."""
    return "loss" in tokenize(name) or is_perplexity(name)


def is_raw_perplexity(name: str) -> bool:
    """A perplexity logged as itself, e^loss (``train/perplexity``, fairseq's ``ppl``), not as its log
    (MLPerf's ``eval_log_perplexity``, already the cross-entropy)."""
    return is_perplexity(name) and not LOG_TOKENS.intersection(tokenize(name))


def log_scale_name(name: str) -> str:
    """``train/perplexity`` → ``ln(train/perplexity)``: the name the judge reads ln of the metric under."""
    return f"{LOG_SCALE_PREFIX}{name}{LOG_SCALE_SUFFIX}"


def logged_name(name: str) -> str:
    """The metric's name as logged: ``ln(train/perplexity)`` → ``train/perplexity`` (others unchanged)."""
    if name.startswith(LOG_SCALE_PREFIX) and name.endswith(LOG_SCALE_SUFFIX):
        return name[len(LOG_SCALE_PREFIX) : -len(LOG_SCALE_SUFFIX)]
    return name


def _check_override_value(name: str, value: str) -> str:
    key = value.strip().lower()
    if key not in OVERRIDE_ROLES:
        valid = ", ".join(OVERRIDE_ROLES)
        raise ConfigError(f"role override {name}={value!r} is not a known role; use one of: {valid}")
    return key


def _override_info(name: str, key: str) -> RoleInfo:
    fixed = OVERRIDE_ROLES[key]
    if fixed is not None:
        return fixed
    direction = _direction(tokenize(name)) or Direction.LOWER
    role = MetricRole.EVAL if key == "eval" else MetricRole.OTHER
    return RoleInfo(role, direction)


def assign_roles(names: Iterable[str], overrides: Mapping[str, str] | None = None) -> dict[str, RoleInfo]:
    """Role of every metric, overrides first; ``ignore`` drops a metric.

    Every override value is checked even when its metric has not appeared yet (metrics appear as a run
    goes on, so an override for a missing name is not an error).
    """
    checked = {name: _check_override_value(name, value) for name, value in (overrides or {}).items()}
    result: dict[str, RoleInfo] = {}
    for name in names:
        key = checked.get(name)
        if key == "ignore":
            continue
        result[name] = infer_role(name) if key is None else _override_info(name, key)
    if adversarial_run(result):
        for name, info in result.items():
            if name not in checked and _is_reconstruction_loss(info, tokenize(name)):
                result[name] = RoleInfo(MetricRole.TRAIN_LOSS, Direction.LOWER)
    for name in _unnamed_terms(result, checked) or _error_terms(result, checked):
        result[name] = RoleInfo(MetricRole.TRAIN_LOSS, Direction.LOWER)
    return result


def _unnamed_terms(roles: Mapping[str, RoleInfo], checked: Mapping[str, str]) -> list[str]:
    """The loss terms of a log that prints nothing but its training terms under their own short names.

    A pix2pix-style ``loss_log.txt`` written by a multi-task model prints ``mtm``, ``warp``, ``fdepth``,
    ``segmt``: every value a term of the loss it minimises (the logger prints the model's losses and nothing
    else), none with a word the judge reads. When every metric of the run is on the train split
    (``train/...``; a counter such as ``epoch`` aside) and none has a role (no loss, eval, LR or grad norm,
    no GAN term), the ones with no word of their own (no quality, modifier, counter, adversarial or
    not-falling word) are its train losses: each falls in a healthy run (the 3D model's five terms all do,
    corpus_real log-MAJOR-BCT-3D-1), and the judge follows the first by name (`primary_train_loss`). Without
    such terms, a run's regression errors on the training split are (`_error_terms`): a run that logs only
    its train MAE minimises it (corpus_real log-tt-lbd-hfut-1, healthy, and log-lk-accusmus-1, ambiguous,
    were unsure at every check for "no train-loss or eval metric"). A log with any named loss or eval keeps
    its named metrics alone; one with a discriminator has its reconstruction terms (above); an overridden
    metric keeps its override.
    """
    if any(info.role is not MetricRole.OTHER for info in roles.values()):
        return []
    tokens = {name: tokenize(name) for name in roles if not COUNTER_TOKENS.intersection(tokenize(name))}
    if not all(TRAIN_SPLIT_TOKENS.intersection(t) for t in tokens.values()):
        return []
    if any(ADVERSARIAL_TOKENS.intersection(t) for t in tokens.values()):
        return []
    return [name for name, t in tokens.items() if name not in checked and _unnamed(t)]


def _error_terms(roles: Mapping[str, RoleInfo], checked: Mapping[str, str]) -> list[str]:
    """The regression errors on the training split (``train/mse``, ``train_mae``: `ERROR_TERM_TOKENS`) of a run
    with no train loss and no eval: the quantity its model minimises, so its train losses. An LR or a grad
    norm beside them changes nothing; a named loss or an eval keeps them metrics of their own."""
    if any(info.role in (MetricRole.TRAIN_LOSS, MetricRole.EVAL) for info in roles.values()):
        return []
    return [
        name for name in roles
        if name not in checked and ERROR_TERM_TOKENS.intersection(tokenize(name))
        and TRAIN_SPLIT_TOKENS.intersection(tokenize(name))
    ]  # fmt: skip


def _unnamed(tokens: tuple[str, ...]) -> bool:
    """Nothing but split words and words no role list knows (``train/mtm``: a term of the loss)."""
    rest = [t for t in tokens if t not in TRAIN_SPLIT_TOKENS]
    return bool(rest) and not _ROLE_WORDS.intersection(rest) and _direction(tokens) is None


def is_discriminator(name: str) -> bool:
    """Whether a metric's name says it is a GAN discriminator's (``D_A``, ``D_real``, ``loss_D``, ``disc``)."""
    return bool(DISCRIMINATOR_TOKENS.intersection(tokenize(name)))


def adversarial_run(names: Iterable[str]) -> bool:
    """Whether the run logs a discriminator metric (`is_discriminator`): a GAN, whose every other term is read
    beside an adversarial game (see RECONSTRUCTION_TOKENS)."""
    return any(is_discriminator(name) for name in names)


def reconstruction_term(name: str) -> bool:
    """Whether a metric's name says it is a GAN generator's reconstruction term (``G_L1``, ``cycle_A``,
    ``G_VGG``, ``loss_g_cycle``): a reconstruction word and no adversarial one."""
    tokens = tokenize(name)
    return bool(RECONSTRUCTION_TOKENS.intersection(tokens)) and not ADVERSARIAL_TOKENS.intersection(tokens)


def _is_reconstruction_loss(info: RoleInfo, tokens: tuple[str, ...]) -> bool:
    """An unrecognised GAN metric named by a reconstruction term (see RECONSTRUCTION_TOKENS). Not one whose
    name says it rises or need not fall on that branch: a score (``psnr_img_rec``, higher is better) or a KL
    term (``kl_rec``: `NOT_FALLING_TOKENS`), which would be judged as a loss in the wrong direction."""
    if info.role is not MetricRole.OTHER or EVAL_SPLIT_TOKENS.intersection(tokens):
        return False
    if ADVERSARIAL_TOKENS.intersection(tokens) or NOT_FALLING_TOKENS.intersection(tokens):
        return False
    if info.direction is Direction.HIGHER:
        return False
    return bool(RECONSTRUCTION_TOKENS.intersection(tokens)) and not MODIFIER_TOKENS.intersection(tokens)


def _train_loss_rank(name: str, position: int) -> tuple[int, int, int, int, int, int]:
    """Sort key: a discriminator's loss last, plain losses before components, per-step before per-epoch,
    short and common first; a metric read on the log scale ranks as logged (its ``ln(...)`` adds no word).

    A discriminator's loss (``d_loss``, ``loss_D``) is the one term of a GAN that a healthy run drives *up*:
    it starts near 0 while the generator's output is easy to tell apart and rises to a contested level as the
    generator improves (an image-colourisation GAN's ``d_loss`` 0.002 → 0.02 over 60,000 healthy iterations,
    a molecule GAN's 0.0004 → 0.02: corpus_real log-ls-yggyatsso-1, log-ls-zechariabarriga-1), so followed as
    the run's loss its rise reads as a blow-up. The generator's loss beside it is followed instead."""
    tokens = tokenize(logged_name(name))
    rest = [t for t in tokens if t not in PLAIN_LOSS_QUALIFIERS]
    plain = 0 if rest == ["loss"] else 1
    known = PREFERRED_TRAIN_LOSS
    preferred = known.index(name) if name in known else len(known)
    return (int(is_discriminator(logged_name(name))), plain, int("epoch" in tokens), len(tokens), preferred, position)


def primary_train_loss(roles: Mapping[str, RoleInfo]) -> str | None:
    """The one training loss the judge follows: ``loss`` over ``train_loss_epoch`` over ``loss_bbox``."""
    candidates = [
        (_train_loss_rank(name, i), name)
        for i, (name, info) in enumerate(roles.items())
        if info.role is MetricRole.TRAIN_LOSS
    ]
    return min(candidates)[1] if candidates else None


def _split_pair(item: str, form: str, example: str) -> tuple[str, str]:
    key, sep, value = item.rpartition("=")
    if not sep or not key.strip() or not value.strip():
        raise ConfigError(f"{item!r} is not of the form {form}; write it like {example}")
    return key.strip(), value.strip()


def parse_role_overrides(items: list[str]) -> dict[str, str]:
    """``["val_bleu=eval_higher"]`` → ``{"val_bleu": "eval_higher"}``; a later item wins over an earlier."""
    result: dict[str, str] = {}
    for item in items:
        key, value = _split_pair(item, "KEY=ROLE", "val_bleu=eval_higher")
        result[key] = _check_override_value(key, value)
    return result


def parse_baselines(items: list[str]) -> dict[str, float]:
    """``["eval_accuracy=0.82"]`` → ``{"eval_accuracy": 0.82}``; the value must be a finite number."""
    result: dict[str, float] = {}
    for item in items:
        key, text = _split_pair(item, "KEY=VALUE", "eval_accuracy=0.82")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise ConfigError(f"baseline {item!r} needs a finite number after '='; write it like eval_accuracy=0.82")
        result[key] = value
    return result
