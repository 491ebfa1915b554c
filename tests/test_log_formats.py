"""Printed logs of common trainers, each line in the form the tool prints it: an eval line's numbers must
land on eval metrics, never on the train loss of the same name (nanoGPT prints "val loss" after "train
loss"; fairseq, Megatron and timm print "loss" on their validation lines too)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from mcp_training_check.roles import assign_roles, primary_train_loss
from mcp_training_check.sources.logparse import parse_lines
from tests.test_cli import cli


def parsed(lines: list[str]) -> tuple[dict[str, list[tuple[int, float]]], dict[str, str]]:
    series = parse_lines(lines).series
    points = {name: list(zip(c.steps.tolist(), c.values.tolist(), strict=True)) for name, c in series.items()}
    return points, {name: info.role.value for name, info in assign_roles(series).items()}


def nanogpt_log(iters: int, val_loss: Callable[[int, float], float]) -> list[str]:
    """karpathy/nanoGPT's train.py: an eval block every 250 iters, then the iter line."""
    lines = []
    for it in range(0, iters + 1, 10):
        train = 2.0 + 8.0 * math.exp(-it / 300)
        if it % 250 == 0:
            lines.append(f"step {it}: train loss {train:.4f}, val loss {val_loss(it, train):.4f}")
        lines.append(f"iter {it}: loss {train + 0.05 * math.sin(it):.4f}, time 101.23ms, mfu 31.20%")
    return lines


def test_nanogpt_val_loss_is_an_eval_and_never_the_train_loss() -> None:
    points, roles = parsed(nanogpt_log(1000, lambda it, train: train + 0.1))
    assert roles["val_loss"] == "eval" and roles["loss"] == "train_loss"
    assert [s for s, _ in points["val_loss"]] == [0, 250, 500, 750, 1000]
    assert len(points["loss"]) == 101 and primary_train_loss(assign_roles(points)) == "loss"
    assert all(abs(v - (2.0 + 8.0 * math.exp(-s / 300) + 0.05 * math.sin(s))) < 1e-3 for s, v in points["loss"])


def test_a_nanogpt_run_whose_val_loss_climbs_is_seen_by_the_judge(tmp_path) -> None:
    """Before, `val loss` was read as `loss` and overwritten by the iter line: the overfit was invisible."""
    log = tmp_path / "train.log"
    log.write_text("\n".join(nanogpt_log(3000, lambda it, train: 2.4 + max(0.0, it - 1000) / 400)) + "\n")
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    metrics = {m["name"]: m for m in report["snapshot"]["metrics"]}
    assert metrics["val_loss"]["role"] == "eval" and metrics["val_loss"]["last"] > 7
    assert report["verdict"]["decision"] != "continue", report["summary"]
    assert "val_loss" in report["summary"]


def test_fairseq_valid_lines_are_evals_and_num_updates_is_the_step() -> None:
    lines = []
    for epoch in range(1, 4):
        updates = epoch * 100
        train = (f"| epoch {epoch:03d} | loss {10 - epoch:.3f} | nll_loss {9 - epoch:.3f} | ppl {2 ** (9 - epoch):.2f} "
                 f"| wps 12345 | ups 2 | wpb 3000 | bsz 100 | num_updates {updates} | lr 0.0005 "
                 f"| gnorm {1.5 / epoch:.3f} | clip 0 | oom 0 | train_wall 50 | wall {epoch * 60}")  # fmt: skip
        valid = (f"| epoch {epoch:03d} | valid on 'valid' subset | loss {9.5 - epoch:.3f} "
                 f"| nll_loss {8.5 - epoch:.3f} | ppl {2 ** (8.5 - epoch):.2f} | num_updates {updates}")  # fmt: skip
        lines += [train, valid]
    points, roles = parsed(lines)
    assert points["loss"] == [(100, 9.0), (200, 8.0), (300, 7.0)], "a valid line's loss went into the train loss"
    assert points["valid/loss"] == [(100, 8.5), (200, 7.5), (300, 6.5)]
    assert roles["valid/loss"] == "eval" and roles["gnorm"] == "grad_norm" and roles["loss"] == "train_loss"


def test_fairseq_hydra_train_inner_and_valid_lines() -> None:
    lines = [
        "2023-05-01 10:00:00 | INFO | train_inner | epoch 001:    100 / 1000 loss=9.876, nll_loss=9.1, ppl=548.2, "
        "wps=1234, ups=2, wpb=3000, bsz=100, num_updates=100, lr=0.0005, gnorm=1.2, clip=0, train_wall=50, wall=100",
        "2023-05-01 10:01:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.1 | nll_loss 7.5 | "
        "ppl 181 | wps 5000 | wpb 3000 | bsz 100 | num_updates 100",
    ]
    points, roles = parsed(lines)
    assert points["loss"] == [(100, 9.876)] and points["valid/loss"] == [(100, 8.1)]
    assert roles["valid/nll_loss"] == "eval"


def test_megatron_validation_lines_are_evals_at_their_iteration() -> None:
    lines = []
    for it in (100, 200, 300):
        lines.append(f" iteration      {it}/  143000 | consumed samples:       {it * 512} | elapsed time per "
                     f"iteration (ms): 1234.5 | learning rate: 1.000E-04 | global batch size:   512 | lm loss: "
                     f"{8 - it / 100:.6E} | loss scale: 4096.0 | grad norm: 1.234 | number of skipped iterations:   0 "
                     "| number of nan iterations:   0 |")  # fmt: skip
        if it % 200 == 0:
            lines.append(f" validation loss at iteration {it} | lm loss value: {7.5 - it / 100:.6E} | lm loss PPL: "
                         f"{math.exp(7.5 - it / 100):.6E} | ")  # fmt: skip
    points, roles = parsed(lines)
    assert points["lm_loss"] == [(100, 7.0), (200, 6.0), (300, 5.0)]
    assert points["validation/lm_loss_value"] == [(200, 5.5)]
    assert roles["validation/lm_loss_value"] == "eval" and roles["validation/lm_loss_PPL"] == "eval"
    assert [n for n, r in roles.items() if r == "train_loss"] == ["lm_loss"]


def test_timm_test_lines_are_evals() -> None:
    lines = [
        "Train: 0 [   0/1251 (  0%)]  Loss: 6.942 (6.94)  Time: 3.1s,  330.00/s  (3.1s,  330.00/s)  LR: 1.000e-06  "
        "Data: 2.0 (2.0)",
        "Train: 0 [1250/1251 (100%)]  Loss: 6.102 (6.52)  Time: 0.3s, 3300.00/s  (0.4s, 2800.00/s)  LR: 1.000e-06  "
        "Data: 0.01 (0.03)",
        "Test: [  48/48]  Time: 0.1 (0.2)  Loss:  6.800 (6.80)  Acc@1:  0.50 ( 0.41)  Acc@5:  2.00 ( 1.90)",
    ]
    points, roles = parsed(lines)
    assert [v for _, v in points["Loss"]] == [6.942, 6.102], "the test loss went into the train loss"
    assert roles["Test/Loss"] == "eval" and roles["Test/Acc@1"] == "eval"
    assert points["Test/Acc@1"] == [(2, 0.5)], "an eval line lands at the latest train step"


def speedrun_log(last: int, total: int = 3000) -> str:
    """A modded-nanogpt-style log: the step counted against its total, a val loss every 125 steps."""
    return "".join(
        f"step:{s}/{total} val_loss:{3.28 + 7.5 * math.exp(-s / 400):.4f} train_time:{s * 10}ms step_avg:10.00ms\n"
        for s in range(0, last + 1, 125)
    )


def test_a_log_that_counts_its_steps_against_a_total_ends_monitoring_there(tmp_path) -> None:
    """Issue 9 (7): a log that stopped growing is the launcher's business; the run's own facts end monitoring.
    "step:3000/3000" is such a fact, as the last line of a finished run."""
    log = tmp_path / "train.log"
    log.write_text(speedrun_log(1500))
    running = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert running["next_action"] == "continue_monitoring", running["summary"]
    log.write_text(speedrun_log(3000))
    ended = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert ended["next_action"] == "end_monitoring", ended["summary"]
    messages = [signal["message"] for signal in ended["verdict"]["signals"]]
    assert "the run has ended: step 3,000 reached its total of 3,000 steps." in messages


def test_the_total_is_read_from_megatron_and_kept_across_reads() -> None:
    first = parse_lines([" iteration      100/  143000 | lm loss: 7.0E+00 | grad norm: 1.2 |"])
    assert first.state["total_steps"] == 143000
    later = parse_lines([" iteration      200/  143000 | lm loss: 6.5E+00 |", "some chatter 5/10"], first.state)
    assert later.state["total_steps"] == 143000, "a line that is no step count does not change it"
