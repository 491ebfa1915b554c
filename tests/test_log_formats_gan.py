"""pytorch-CycleGAN-and-pix2pix's ``loss_log.txt`` (and pix2pixHD's) read and judged as a user runs it: the
real CLI, a subprocess per check, on lines written in the logger's own format from a committed run of
corpus_real/."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

from mcp_training_check.sources.logparse import parse_lines
from tests.test_cli import cli

RAW = Path(__file__).resolve().parents[1] / "corpus_real" / "raw" / "logs"
HEADER = "================ Training Loss (Sun Mar  1 10:00:00 2020) ================"


def loss_log(raw: str, epoch_length: int, *, data: bool) -> list[str]:
    """The ``loss_log.txt`` lines of a corpus_real raw file, as ``Visualizer.print_current_losses`` writes them:
    the raw file's step is ``(epoch - 1) x epoch_length + iters`` (said in its first line)."""
    rows: dict[int, dict[str, float]] = defaultdict(dict)
    with gzip.open(RAW / raw, "rt") as f:
        for line in f:
            if not line.startswith("#"):
                step, name, value = line.split()
                rows[int(step)][name.removeprefix("train/")] = float(value)
    lines = [HEADER]
    for step, losses in sorted(rows.items()):
        epoch, iters = (step - 1) // epoch_length + 1, (step - 1) % epoch_length + 1
        timing = "time: 0.123, data: 0.002" if data else "time: 0.123"
        terms = " ".join(f"{name}: {value:.3f}" for name, value in losses.items())
        lines.append(f"(epoch: {epoch}, iters: {iters}, {timing}) {terms} ")
    return lines


def test_a_pix2pix_loss_log_reads_as_train_losses_on_a_step_that_goes_on_across_epochs():
    """corpus_real log-pix2pix-projet-ter-1: https://github.com/noureddinekhiati/projet-ter/blob/
    b49eb0a41c43be5489e57b01b902d66069d8bd48/loss_log.txt (600 iters an epoch). ``iters`` restarts at each
    epoch; the step must not: it is the iters of the epochs before plus the line's. The header's timings are
    no metrics."""
    lines = loss_log("pix2pix-projet-ter-1.txt.gz", 600, data=True)
    assert lines[1].startswith("(epoch: 1, iters: 100, time: 0.123, data: 0.002) G_GAN: 6.209 G_L1: 4.523")
    parsed = parse_lines(lines)
    assert set(parsed.series) == {"train/G_GAN", "train/G_L1", "train/D_real", "train/D_fake", "epoch"}
    steps = parsed.series["train/G_L1"].steps
    assert steps.size == len(lines) - 1 and (steps[1:] > steps[:-1]).all()
    assert parsed.series["epoch"].values[-1] > 100
    assert not any("prints no step numbers" in w for w in parsed.warnings)


def test_a_pix2pixhd_loss_log_is_judged_through_the_cli_and_continues(tmp_path):
    """corpus_real log-pix2pixHD-Owain-1 (healthy): https://github.com/Owain-LTW/Python_Exercises/blob/
    c825e86418e8f08eba86e6e620933272950f4047/loss_log.txt, pix2pixHD's ``(epoch, iters, time)`` lines, 2900
    iters an epoch, G_GAN, G_GAN_Feat, G_VGG, D_real, D_fake. Checked three times as it grows: each check
    judges it on ``train/G_VGG`` and continues. Control (main): the terms read as ``G_VGG`` and so on, none a
    train loss, and the check is unsure for lack of one."""
    lines = loss_log("pix2pixHD-Owain-1.txt.gz", 2900, data=False)
    log, home = tmp_path / "loss_log.txt", tmp_path / "home"
    written = 0
    for cut in (0.3, 0.6, 1.0):
        end = int(cut * len(lines))
        with log.open("a") as f:
            f.write("\n".join(lines[written:end]) + "\n")
        written = end
        done = cli("check", str(log), "--json", home=home, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        roles = {m["name"]: m["role"] for m in report["snapshot"]["metrics"]}
        assert roles["train/G_VGG"] == "train_loss" and roles["train/G_GAN"] == "other", roles
        assert report["verdict"]["decision"] == "continue", report["verdict"]["summary"]
