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
    assert [s for s, _ in points["Loss"]] == [0, 1250], "epoch 0's batch counts are the steps"
    assert points["Test/Acc@1"] == [(1250, 0.5)], "an eval line lands at the latest train step"


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


# --------------------------------------------------------------------------- progress bars (the real tqdm)


def lightning_console(
    path, epochs: int, batches: int, loss: Callable[[int], float], val: Callable[[int], float]
) -> None:
    """What PyTorch Lightning's default TQDMProgressBar writes to a redirected stdout, driven through the real
    tqdm the way it drives it: one train bar reset every epoch ("Epoch N"), its count set and refreshed after
    every batch and then its postfix set (so every count shows the old values once, then the new); a
    validation bar one row below (cursor-up escapes in the file), then the val metrics in the train bar's
    postfix. Lightning pads floats to 5 characters ("2.300")."""
    from tqdm import tqdm

    class LightningTqdm(tqdm):
        @staticmethod
        def format_num(n):
            text = tqdm.format_num(n)
            return text if isinstance(n, int) or "e" in text else (text if "." in text else text + ".").ljust(5, "0")

    metrics: dict[str, float] = {"v_num": 0}
    with path.open("w") as out:
        train = LightningTqdm(desc="Training", file=out, leave=True, dynamic_ncols=True, smoothing=0)
        for epoch in range(epochs):
            train.reset(batches)
            train.initial = 0
            train.set_description(f"Epoch {epoch}")
            for n in range(1, batches + 1):
                metrics["train_loss"] = loss(epoch * batches + n)
                train.n = n
                train.refresh()
                train.set_postfix(metrics)
            bar = LightningTqdm(desc="Validation", file=out, position=1, leave=False, dynamic_ncols=True)
            bar.reset(4)
            bar.set_description("Validation DataLoader 0")
            for n in range(1, 5):
                bar.n = n
                bar.refresh()
            metrics["val_loss"] = val(epoch)
            train.set_postfix(metrics)
            bar.close()
        train.close()


def test_a_lightning_console_log_is_read_from_its_progress_bar(tmp_path) -> None:
    """Before, a bar's postfix was never read: Lightning's default console output gave "no train-loss or eval
    metric". Steps are the bar's counts across epochs; each value once, however often the bar shows it."""
    log = tmp_path / "console.log"
    lightning_console(log, 3, 50, lambda s: 2.3 * math.exp(-s / 60) + 0.1 + 1e-4 * s, lambda e: 1.5 - 0.2 * e)
    points, roles = parsed(log.read_text().splitlines())
    assert roles["train_loss"] == "train_loss" and roles["val_loss"] == "eval"
    assert [s for s, _ in points["train_loss"]] == list(range(1, 151))
    assert all(abs(v - (2.3 * math.exp(-s / 60) + 0.1 + 1e-4 * s)) < 5e-3 for s, v in points["train_loss"])
    assert points["val_loss"] == [(50, 1.5), (100, 1.3), (150, 1.1)]
    assert "v_num" not in points


def test_a_lightning_run_gone_nan_is_stopped_from_its_console_log(tmp_path) -> None:
    log = tmp_path / "console.log"
    lightning_console(log, 4, 40, lambda s: math.nan if s > 130 else 2.0 * math.exp(-s / 50) + 0.2, lambda e: 1.0)
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["verdict"]["decision"] == "stop", report["summary"]
    main = report["verdict"]["signals"][0]["message"]
    assert main.startswith("train_loss is NaN at step 160: 30 non-finite"), "a NaN goes on at each step"


def test_a_set_postfix_loop_reads_its_step_bar(tmp_path) -> None:
    """diffusers' and accelerate's training scripts: one bar over all steps ("Steps"), updated every step and
    its postfix set to the step's logs."""
    from tqdm import tqdm

    log = tmp_path / "train.log"
    with log.open("w") as out:
        bar = tqdm(range(200), desc="Steps", file=out, mininterval=0)
        for step in range(1, 201):
            bar.update(1)
            bar.set_postfix(step_loss=0.5 + 0.4 * math.cos(step / 7) * math.exp(-step / 80), lr=1e-4)
        bar.close()
    points, roles = parsed(log.read_text().splitlines())
    assert roles["step_loss"] == "train_loss" and roles["lr"] == "learning_rate"
    assert [s for s, _ in points["step_loss"]][:3] == [1, 2, 3] and points["step_loss"][-1][0] == 200
    assert points["lr"] == [(1, 1e-4)], "an unchanged value is one point"


def test_a_bar_with_scaled_counts_is_read(tmp_path) -> None:
    """`tqdm(..., unit_scale=True)` shows counts as "5.00/3.00k", "1.50k/3.00k": before, such a bar matched
    nothing and a check of the log said "no metrics read yet". Its steps have the bar's 3 significant digits."""
    from tqdm import tqdm

    log = tmp_path / "train.log"
    with log.open("w") as out:
        bar = tqdm(total=3000, desc="train", file=out, mininterval=0, unit_scale=True)
        for step in range(1, 3001):
            bar.update(1)
            bar.set_postfix(loss=f"{2.0 * math.exp(-step / 600) + 0.2:.4f}")
        bar.close()
    assert "1.50k/3.00k" in log.read_text()
    points, _ = parsed(log.read_text().splitlines())
    steps = [s for s, _ in points["loss"]]
    assert steps[:3] == [1, 2, 3] and steps[-1] == 3000 and steps == sorted(steps)
    assert all(abs(v - (2.0 * math.exp(-s / 600) + 0.2)) < 0.02 for s, v in points["loss"])
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["snapshot"]["last_step"] == 3000 and report["verdict"]["decision"] == "continue"


def test_printed_metric_lines_win_over_a_bar_showing_the_same_metric(tmp_path) -> None:
    """A loop that shows its loss in its bar and also prints it every 10 steps: from the first printed line
    on, the printed lines hold the loss (the bar shows what it happens to show, at its own counts); before
    it, the bar was all the log had."""
    from tqdm import tqdm

    log = tmp_path / "train.log"
    with log.open("w") as out:
        bar = tqdm(total=100, file=out, mininterval=0)
        for step in range(1, 101):
            bar.update(1)
            bar.set_postfix(loss=f"{1 / step:.3f}", acc=0.5 + step / 400)
            if step % 10 == 0:
                bar.write(f"step {step} loss {1 / step:.5f}", file=out)
        bar.close()
    points, _ = parsed(log.read_text().splitlines())
    assert [s for s, _ in points["loss"]] == [*range(1, 10), *range(10, 101, 10)]
    assert [v for _, v in points["loss"]][9:] == [round(1 / s, 5) for s in range(10, 101, 10)]
    assert len(points["acc"]) == 100, "a metric only the bar shows is still read from it"


def test_a_bar_count_beyond_int64_is_one_skipped_line() -> None:
    good = "Epoch 0:  50%|█████     | {n}/10 [00:01<00:01, 9.00it/s, loss={v}]"
    parsed_lines = parse_lines([good.format(n=1, v=2.0), good.format(n=10**30, v=1.0), good.format(n=2, v=1.5)])
    assert parsed_lines.skipped_lines == 1
    assert {k: c.steps.tolist() for k, c in parsed_lines.series.items()} == {"loss": [1, 2]}


def test_the_logs_own_error_lines_reach_the_check(tmp_path) -> None:
    """Before, a log's traceback and "CUDA out of memory" lines were collected and dropped on the way to the
    snapshot: a crashed run's check said only "no new points"."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {s} loss {2.0 / s:.4f}\n" for s in range(1, 31)))
    home = tmp_path / "home"
    cli("check", str(log), "--json", home=home, cwd=tmp_path)
    crash = ["Traceback (most recent call last):"] * 5 + ["RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"]
    with log.open("a") as fh:
        fh.write("\n".join(crash) + "\n")
    report = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
    warnings = report["snapshot"]["warnings"]
    assert warnings[:2] == ["error: Traceback (most recent call last):", f"error: {crash[-1]}"]
    assert warnings[2] == "note: earlier error/fatal lines of the log not shown: 3"  # the 5th header: its exception
    again = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
    assert again["snapshot"]["warnings"] == [], "only the lines read at this check are quoted"


def test_a_trainer_state_json_is_read_as_the_document_it_is(tmp_path) -> None:
    """Before, a trainer_state.json got a note to point `run` at the console output instead; its log_history is
    read now (`sources.logdoc`), each check taking the records the Trainer added since."""
    state = tmp_path / "trainer_state.json"
    history = [{"epoch": s / 100, "loss": 2.0 - s / 100, "step": s} for s in range(10, 200, 10)]
    state.write_text(json.dumps({"global_step": 190, "log_history": history}, indent=2))
    report = json.loads(cli("check", str(state), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["snapshot"]["last_step"] == 190 and report["snapshot"]["new_points"] == 2 * len(history)
    assert any("trainer_state.json" in w and "rewrites whole" in w for w in report["snapshot"]["warnings"])


def test_a_log_with_lines_but_no_metric_says_so(tmp_path) -> None:
    """Before, a log whose lines held no metric the reader knows (a tqdm bar without a postfix, prose) answered
    "no metrics read yet" at every check with no warning: the user waited for metrics that would never come."""
    from tqdm import tqdm

    log = tmp_path / "train.log"
    with log.open("w") as out:
        for _ in tqdm(range(300), desc="Steps", file=out, mininterval=0):
            pass
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    said = [w for w in report["snapshot"]["warnings"] if "holds a metric" in w]
    assert len(said) == 1 and "none of the lines read so far (" in said[0] and "point `run`" in said[0], said
    header_only = tmp_path / "metrics.csv"
    header_only.write_text("step,loss,lr\n")  # a CSV log just started: its header, no row yet
    report = json.loads(cli("check", str(header_only), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert not [w for w in report["snapshot"]["warnings"] if "holds a metric" in w]


def test_a_bar_whose_loss_shows_no_change_still_moves_the_runs_step(tmp_path) -> None:
    """Before, a bar that counted on while its postfix showed the same loss (3 significant digits of a
    converged loss) gave no point: the check said "0 new values", the step stayed where
    the value last changed, and the schedule treated the advancing run as one with no new points. At the end of
    a read the bar's train loss is a point at the bar's count; its evals are not repeated (a repeated eval
    would pass for another eval)."""
    from tqdm import tqdm

    log = tmp_path / "train.log"

    def steps(first: int, last: int, loss: Callable[[int], str]) -> None:
        with log.open("a") as out:
            bar = tqdm(total=10_000, initial=first - 1, desc="Steps", file=out, mininterval=0)
            for step in range(first, last + 1):
                bar.update(1)
                bar.set_postfix(loss=loss(step), val_loss="0.80")

    steps(1, 2000, lambda s: f"{2.0 / (1 + s / 50):.3g}")
    home = tmp_path / "home"
    first = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
    assert first["snapshot"]["last_step"] == 2000
    steps(2001, 3000, lambda s: "0.0488")
    again = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
    assert again["snapshot"]["last_step"] == 3000 and again["snapshot"]["new_points"] == 1, again["snapshot"]
    assert "no new points" not in again["summary"]
    val = next(m for m in again["snapshot"]["metrics"] if m["name"] == "val_loss")
    assert val["last_step"] < 3000, "an eval shown unchanged is not another eval"


def test_the_trainer_banners_are_neither_metrics_nor_steps(tmp_path) -> None:
    """The HF Trainer's console (transformers' run_glue.py with its logger format): the training banner's sizes
    and each evaluation's banner were read as ``key = value`` metrics (``Epochs``, ``device``, ``steps`` 375,
    ``examples``, ``size``), and in this log without step numbers each banner line counted as a step: 37
    logging lines read as step 47."""
    prefix = "[INFO|trainer.py:2135] 2026-11-30 10:00:01,123 >> "
    lines = [prefix + "***** Running training *****"] + [
        prefix + line
        for line in (
            "  Num examples = 1,000",
            "  Num Epochs = 3",
            "  Instantaneous batch size per device = 8",
            "  Total train batch size (w. parallel, distributed & accumulation) = 8",
            "  Gradient Accumulation steps = 1",
            "  Total optimization steps = 375",
            "  Number of trainable parameters = 109,483,778",
        )
    ]
    eval_banner = [prefix + "***** Running Evaluation *****", prefix + "  Num examples = 500"]
    eval_banner.append(prefix + "  Batch size = 8")
    for i in range(1, 38):
        loss, epoch = round(2.5 * math.exp(-i / 10) + 0.3, 4), round(i / 12.5, 2)
        lines.append(str({"loss": loss, "grad_norm": 1.2, "learning_rate": 5e-5, "epoch": epoch}))
        if i % 12 == 0:
            lines += [*eval_banner, str({"eval_loss": loss * 1.05, "eval_accuracy": 0.5 + i / 100, "epoch": epoch})]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    report = json.loads(cli("read", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    names = {metric["name"] for metric in report["metrics"]}
    assert names.isdisjoint({"Epochs", "device", "steps", "examples", "size"}), names
    assert report["last_step"] == 37


# log-BERT_Weibo_Rumor-1 (corpus_real train split, a trainer_state.json log_history): its last six logged
# losses and LRs, printed as the Trainer prints them; the closing dict's train_loss is the mean of all 52
# logged losses (0.3029), twice the last (0.1636): stored as a point it was a jump at the end of a falling loss.
WEIBO_TAIL = [(0.1666, 5.4438e-06), (0.1707, 4.4748e-06), (0.1687, 3.5078e-06), (0.1668, 2.5388e-06),
              (0.1644, 1.5698e-06), (0.1636, 6.0078e-07)]  # fmt: skip
HF_CLOSING_LINES = [
    "{'train_runtime': 9121.3, 'train_samples_per_second': 452.1, 'train_steps_per_second': 2.829, "
    "'train_loss': 0.3029, 'epoch': 100.0}",
    "***** train metrics *****",
    "  epoch                    =      100.0",
    "  train_loss               =     0.3029",
    "  train_runtime            = 2:32:01.30",
    "  train_samples            =      41238",
    "  train_samples_per_second =    452.101",
]


def test_the_trainers_closing_summary_is_no_point_and_says_the_run_finished(tmp_path) -> None:
    """The HF Trainer's closing dict and the example scripts' `***** train metrics *****` block hold the run's
    averages and timings: the average train_loss entered the series as a last point (and as a metric of its
    own, beside train_runtime), and each block line counted as a step, so the run seemed to go on after it
    had finished. Now neither adds a point, and the run's status is finished: monitoring ends."""
    lines = [
        str({"loss": loss, "grad_norm": 1.1, "learning_rate": lr, "epoch": round(90 + i * 1.9, 2)})
        for i, (loss, lr) in enumerate(WEIBO_TAIL)
    ]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines + HF_CLOSING_LINES) + "\n")
    report = json.loads(cli("check", str(log), "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    snapshot = report["snapshot"]
    names = {metric["name"] for metric in snapshot["metrics"]}
    assert names.isdisjoint({"train_loss", "train_runtime", "train_samples", "train_samples_per_second"}), names
    loss = next(metric for metric in snapshot["metrics"] if metric["name"] == "loss")
    assert loss["last"] == 0.1636 and snapshot["last_step"] == len(WEIBO_TAIL), (loss, snapshot["last_step"])
    assert snapshot["run_info"]["status"] == "finished"
    assert report["schedule"]["monitoring"] is False


def test_the_trainer_banner_printed_without_a_logger_prefix_is_no_metric() -> None:
    """transformers' own logger prints the banner bare ("  Num Epochs = 3"): stripped, the line no longer
    held the indented marker and became the metric ``Epochs`` at step 1."""
    banner = ["***** Running training *****", "  Num examples = 7,473", "  Num Epochs = 3",
              "  Instantaneous batch size per device = 8",
              "  Total train batch size (w. parallel, distributed & accumulation) = 8",
              "  Gradient Accumulation steps = 1", "  Total optimization steps = 2,805",
              "  Number of trainable parameters = 124,439,808"]  # fmt: skip
    series, _ = parsed([*banner, "{'loss': 2.1312, 'learning_rate': 4.9e-05, 'epoch': 0.18}"])
    assert set(series) == {"loss", "learning_rate", "epoch"} and series["loss"] == [(1, 2.1312)], series


def test_a_step_record_that_logs_its_own_train_runtime_is_a_point_and_no_end() -> None:
    """Only the Trainer's closing dict (runtime and throughputs, no step's loss) is its summary: a logger that
    records the elapsed ``train_runtime`` beside each step's loss keeps its points, and its run goes on."""
    lines = [json.dumps({"step": s, "loss": 2.0 - s / 100, "train_runtime": 1.5 * s}) for s in (10, 20, 30)]
    parsed = parse_lines(lines)
    assert parsed.series["loss"].steps.tolist() == [10, 20, 30] and parsed.state["finished"] is False
    closing = str({"train_runtime": 45.0, "train_samples_per_second": 9.1, "train_loss": 1.8, "epoch": 1.0})
    ended = parse_lines([closing], parsed.state)
    assert ended.series == {} and ended.state["finished"] is True
