"""Metric roles from names: token matching, the traps other tools fell into, overrides and CLI parsing."""

from __future__ import annotations

import pytest

from mcp_training_check.errors import ConfigError
from mcp_training_check.models import Direction, MetricRole
from mcp_training_check.roles import (
    OVERRIDE_ROLES,
    RoleInfo,
    assign_roles,
    infer_role,
    parse_baselines,
    parse_role_overrides,
    primary_train_loss,
)

TRAIN = MetricRole.TRAIN_LOSS
EVAL = MetricRole.EVAL
LR = MetricRole.LEARNING_RATE
GRAD = MetricRole.GRAD_NORM
OTHER = MetricRole.OTHER
LOWER = Direction.LOWER
HIGHER = Direction.HIGHER


@pytest.mark.parametrize(
    ("name", "role", "direction"),
    [
        # training losses
        ("loss", TRAIN, LOWER),
        ("train/loss", TRAIN, LOWER),
        ("train_loss", TRAIN, LOWER),
        ("training_loss", TRAIN, LOWER),
        ("loss/train", TRAIN, LOWER),
        ("train/lm_loss", TRAIN, LOWER),
        ("lm loss", TRAIN, LOWER),
        ("loss_bbox", TRAIN, LOWER),
        ("train_loss_step", TRAIN, LOWER),
        ("trainLoss", TRAIN, LOWER),
        # eval metrics, lower is better
        ("eval_loss", EVAL, LOWER),
        ("eval/loss", EVAL, LOWER),
        ("val_loss", EVAL, LOWER),
        ("val/loss_epoch", EVAL, LOWER),
        ("valid_loss", EVAL, LOWER),
        ("validation/perplexity", EVAL, LOWER),
        ("loss/val", EVAL, LOWER),
        ("evalLoss", EVAL, LOWER),
        ("test_wer", EVAL, LOWER),
        ("dev/cer", EVAL, LOWER),
        ("eval/ppl", EVAL, LOWER),
        ("val_error_rate", EVAL, LOWER),
        ("val/rmse", EVAL, LOWER),
        ("eval_nll", EVAL, LOWER),
        ("val/bpb", EVAL, LOWER),
        # eval metrics, higher is better
        ("eval_accuracy", EVAL, HIGHER),
        ("val/psnr", EVAL, HIGHER),  # an image's PSNR / SSIM against its target: higher is better
        ("val_ssim", EVAL, HIGHER),
        ("eval/dice", EVAL, HIGHER),  # a segmentation's overlap scores (MONAI's validation Dice)
        ("val_jaccard", EVAL, HIGHER),
        ("eval/cosine_similarity", EVAL, HIGHER),  # an embedding against its teacher's (a distilled student)
        ("val_similarity_loss", EVAL, LOWER),  # the rightmost quality word decides
        ("val/feature_distance", EVAL, LOWER),
        ("val_acc", EVAL, HIGHER),
        ("val/acc@1", EVAL, HIGHER),
        ("val/top-5", EVAL, HIGHER),
        ("eval_bleu", EVAL, HIGHER),
        ("eval/rouge1", EVAL, HIGHER),
        ("eval/rougeL", EVAL, HIGHER),
        ("dev_f1", EVAL, HIGHER),
        ("val/mAP", EVAL, HIGHER),
        ("test/auc", EVAL, HIGHER),
        ("eval_exact_match", EVAL, HIGHER),
        ("eval/em", EVAL, HIGHER),
        ("val/iou", EVAL, HIGHER),
        ("eval/reward", EVAL, HIGHER),
        ("test_precision", EVAL, HIGHER),
        ("val/recall", EVAL, HIGHER),
        ("eval/score", EVAL, HIGHER),
        # eval metrics as detection tools name them, without a split word
        ("metrics/mAP_0.5", EVAL, HIGHER),  # YOLOv5 (its W&B and results.csv name)
        ("metrics/mAP_0.5:0.95", EVAL, HIGHER),
        ("metrics/precision", EVAL, HIGHER),
        ("metrics/mAP50-95(B)", EVAL, HIGHER),  # YOLOv8 / YOLO11: (B) box, (M) mask
        ("metrics/recall(M)", EVAL, HIGHER),
        ("bbox/AP50", EVAL, HIGHER),  # detectron2
        ("segm/AP", EVAL, HIGHER),
        ("coco/bbox_mAP", EVAL, HIGHER),  # MMDetection
        # learning rate
        ("x/lr0", LR, LOWER),  # YOLOv5: one a parameter group
        ("train/lr2", LR, LOWER),
        ("lr", LR, LOWER),
        ("learning_rate", LR, LOWER),
        ("train/lr", LR, LOWER),
        ("lr-AdamW", LR, LOWER),
        ("lr_group0", LR, LOWER),
        ("optimizer/learning rate", LR, LOWER),
        # gradient norm
        ("grad_norm", GRAD, LOWER),
        ("gradient_norm", GRAD, LOWER),
        ("grad-norm", GRAD, LOWER),
        ("train/grad_norm", GRAD, LOWER),
        ("global_grad_norm", GRAD, LOWER),
        ("total_norm", GRAD, LOWER),
        ("gradNorm", GRAD, LOWER),
        ("norm", GRAD, LOWER),  # llm.c's main.log: "s:0 trl:10.9988 lr:0.000006 norm:15.2"
        ("param_norm", OTHER, LOWER),
        # llm.c's abbreviations: train loss, its val ("test") loss
        ("trl", TRAIN, LOWER),
        ("tel", EVAL, LOWER),
        # everything else
        ("epoch", OTHER, LOWER),
        ("eval_runtime", OTHER, LOWER),
        ("eval_samples_per_second", OTHER, LOWER),
        ("eval_steps_per_second", OTHER, LOWER),
        ("train_runtime", OTHER, LOWER),
        ("train_samples_per_second", OTHER, LOWER),
        ("throughput", OTHER, LOWER),
        ("memory/allocated_gb", OTHER, LOWER),
        ("total_flos", OTHER, LOWER),
        ("train/accuracy", OTHER, HIGHER),
        ("metrics/loss", TRAIN, LOWER),  # metrics/ marks only higher-is-better words as eval
    ],
)
def test_infer_role_table(name: str, role: MetricRole, direction: Direction) -> None:
    assert infer_role(name) == RoleInfo(role, direction)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("train/loss_scale", "fp16 loss scale is a setting, not a loss"),
        ("loss_scale", "same, without a split"),
        ("loss scale", "Megatron prints it with a space"),
        ("loss_weight", "a coefficient"),
        ("nan_loss_count", "a count of bad steps"),
        ("lr_warmup_steps", "a schedule setting, not the learning rate"),
        ("weight_norm", "parameter norm, not gradient norm"),
        ("value", "contains no token of any role"),
        ("devices", "'dev' only as a substring"),
        ("interval", "'val' only as a substring"),
        ("latest_time", "'test' only as a substring"),
        ("glossary_size", "'loss' only as a substring"),
        ("flr", "'lr' only as a substring"),
        ("eval/foo", "eval split but no known quality word: the direction is unknown"),
        ("train/mAP", "average precision on the train split is no eval"),
        ("metrics/train_acc", "a train token under ultralytics' metrics/ prefix"),
        ("precision", "a quality word with no split and no metrics/ prefix"),
    ],
)
def test_substring_and_modifier_traps_are_other(name: str, why: str) -> None:
    assert infer_role(name).role is OTHER, why


def test_eval_loss_is_not_taken_as_the_training_loss() -> None:
    roles = assign_roles(["eval_loss", "loss", "eval_accuracy"])
    assert roles["eval_loss"].role is EVAL
    assert primary_train_loss(roles) == "loss"


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["loss_bbox", "loss_cls", "loss"], "loss"),
        (["train_loss", "train/loss_bbox"], "train_loss"),
        (["loss", "train_loss"], "loss"),  # HF: per-step `loss` over the end-of-run average `train_loss`
        (["train_loss_epoch", "train_loss_step"], "train_loss_step"),
        (["loss_cls", "loss_bbox"], "loss_cls"),  # no plain loss: the first component
        (["train/lm_loss", "train/aux_loss"], "train/lm_loss"),
        (["loss/train", "loss_mask"], "loss/train"),
        (["eval_loss", "lr"], None),
        ([], None),
    ],
)
def test_primary_train_loss(names: list[str], expected: str | None) -> None:
    assert primary_train_loss(assign_roles(names)) == expected


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("train_loss", RoleInfo(TRAIN, LOWER)),
        ("eval", RoleInfo(EVAL, HIGHER)),  # direction read from "bleu"
        ("eval_lower", RoleInfo(EVAL, LOWER)),
        ("eval_higher", RoleInfo(EVAL, HIGHER)),
        ("learning_rate", RoleInfo(LR, LOWER)),
        ("grad_norm", RoleInfo(GRAD, LOWER)),
        ("other", RoleInfo(OTHER, HIGHER)),
        ("EVAL_HIGHER", RoleInfo(EVAL, HIGHER)),  # case-insensitive
    ],
)
def test_overrides_replace_the_inferred_role(override: str, expected: RoleInfo) -> None:
    roles = assign_roles(["my_bleu", "loss"], {"my_bleu": override})
    assert roles["my_bleu"] == expected
    assert roles["loss"] == RoleInfo(TRAIN, LOWER)


def test_ignore_drops_the_metric_and_absent_names_are_fine() -> None:
    roles = assign_roles(["loss", "loss_scale"], {"loss_scale": "ignore", "val_bleu": "eval_higher"})
    assert set(roles) == {"loss"}


def test_eval_override_without_a_direction_word_defaults_to_lower() -> None:
    assert assign_roles(["custom"], {"custom": "eval"})["custom"] == RoleInfo(EVAL, LOWER)


def test_unknown_override_value_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        assign_roles(["loss"], {"val_bleu": "higher_is_better"})
    message = str(info.value)
    assert "val_bleu='higher_is_better'" in message
    for valid in OVERRIDE_ROLES:
        assert valid in message


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["val_bleu=eval_higher"], {"val_bleu": "eval_higher"}),
        ([" train/loss = train_loss "], {"train/loss": "train_loss"}),
        (["a=other", "a=ignore"], {"a": "ignore"}),
        (["x=y=other"], {"x=y": "other"}),
        ([], {}),
    ],
)
def test_parse_role_overrides(items: list[str], expected: dict[str, str]) -> None:
    assert parse_role_overrides(items) == expected


@pytest.mark.parametrize(
    ("item", "expected_in_message"),
    [
        ("val_bleu", "'val_bleu' is not of the form KEY=ROLE"),
        ("=eval", "'=eval' is not of the form KEY=ROLE"),
        ("val_bleu=", "'val_bleu=' is not of the form KEY=ROLE"),
        ("val_bleu=best", "val_bleu='best' is not a known role"),
    ],
)
def test_parse_role_overrides_errors_quote_the_item(item: str, expected_in_message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_role_overrides([item])
    assert expected_in_message in str(info.value)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["eval_accuracy=0.82"], {"eval_accuracy": 0.82}),
        (["val/loss = 1.5e-1", "x=3"], {"val/loss": 0.15, "x": 3.0}),
        (["eval_loss=-2"], {"eval_loss": -2.0}),
    ],
)
def test_parse_baselines(items: list[str], expected: dict[str, float]) -> None:
    assert parse_baselines(items) == expected


@pytest.mark.parametrize(
    ("item", "expected_in_message"),
    [
        ("eval_accuracy", "'eval_accuracy' is not of the form KEY=VALUE"),
        ("eval_accuracy=high", "baseline 'eval_accuracy=high' needs a finite number"),
        ("eval_accuracy=nan", "baseline 'eval_accuracy=nan' needs a finite number"),
        ("eval_accuracy=inf", "needs a finite number"),
        ("=0.5", "is not of the form KEY=VALUE"),
    ],
)
def test_parse_baselines_errors_quote_the_item_and_show_the_form(item: str, expected_in_message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_baselines([item])
    assert expected_in_message in str(info.value)
    assert "eval_accuracy=0.82" in str(info.value)


def test_a_gan_logs_reconstruction_terms_are_train_losses_only_beside_a_discriminator():
    """CycleGAN's cycle_A / idt_A (pix2pix's G_L1) fall in a healthy run while its adversarial D_A and G_A
    do not: beside a discriminator metric they are train losses; without one the same words stay unjudged."""
    gan = assign_roles(["train/d_a", "train/g_a", "train/cycle_a", "train/idt_a"])
    assert gan["train/cycle_a"].role is MetricRole.TRAIN_LOSS
    assert gan["train/idt_a"].role is MetricRole.TRAIN_LOSS
    assert assign_roles(["G_GAN", "G_L1", "D_real"])["G_L1"].role is MetricRole.TRAIN_LOSS
    assert gan["train/d_a"].role is MetricRole.OTHER
    assert gan["train/g_a"].role is MetricRole.OTHER
    assert primary_train_loss(gan) == "train/cycle_a"
    plain = assign_roles(["train/cycle", "identity", "loss"])
    assert plain["train/cycle"].role is MetricRole.OTHER
    assert plain["identity"].role is MetricRole.OTHER
    assert primary_train_loss(plain) == "loss"
    overridden = assign_roles(["D", "cycle_time", "rec"], {"rec": "other"})
    assert overridden["rec"].role is MetricRole.OTHER
    assert overridden["cycle_time"].role is MetricRole.OTHER


def test_a_perceptual_term_beside_a_discriminator_is_a_train_loss_a_feature_matching_gan_term_is_not():
    """pix2pixHD's loss_log.txt (corpus_real log-pix2pixHD-Owain-1): G_VGG, an L1 between VGG features, falls
    as the generator learns; G_GAN_Feat holds the adversarial word and stays unjudged; without a
    discriminator in the log, ``vgg`` means nothing."""
    roles = assign_roles(["train/G_GAN", "train/G_GAN_Feat", "train/G_VGG", "train/D_real", "train/D_fake"])
    assert primary_train_loss(roles) == "train/G_VGG"
    assert roles["train/G_GAN_Feat"].role is MetricRole.OTHER
    assert assign_roles(["vgg", "acc"])["vgg"].role is MetricRole.OTHER


@pytest.mark.parametrize(
    ("names", "losses"),
    [
        # corpus_real log-MAJOR-BCT-3D-1: a multi-task 3D model's loss_log.txt, every term falls
        (["train/mtm", "train/fdepth", "train/bdepth", "train/segmt", "train/warp"], 5),
        (["train/mtm", "train/warp", "epoch"], 2),  # a counter beside them is no term
        (["train/mtm", "train/warp", "val/mtm"], 0),  # an eval: the run has something named
        (["train/mtm", "train/loss"], 1),  # a named loss: it alone
        (["mtm", "warp"], 0),  # no split word: nothing says they are training terms
        (["train/epoch", "train/global_step", "train/tokens_per_sec"], 0),  # counters and rates
        (["train/mtm", "train/D_A"], 0),  # a GAN: its reconstruction terms decide
        (["train/rec", "train/kl"], 1),  # a VAE's KL grows in a healthy run: its reconstruction term alone
    ],
)
def test_a_log_of_unnamed_train_terms_takes_them_as_its_train_losses(names: list[str], losses: int):
    roles = assign_roles(names)
    assert sum(info.role is MetricRole.TRAIN_LOSS for info in roles.values()) == losses


def test_an_override_keeps_its_metric_out_of_the_unnamed_terms():
    roles = assign_roles(["train/mtm", "train/warp"], {"train/warp": "other"})
    assert roles["train/warp"].role is MetricRole.OTHER
    assert roles["train/mtm"].role is MetricRole.TRAIN_LOSS
