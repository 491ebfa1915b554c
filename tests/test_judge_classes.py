"""One test per failure class of issue 9: what the judge got wrong on real public training runs.

Each test names its class. The arrays are realistic fragments (the shapes the issue describes); the
finished-run class goes through the real `training-check check` on a run written by wandb itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.runs import train
from tests.test_cli import cli, healthy_loss

# --------------------------------------------------------------------------- 5. a finished run ending in NaN


def test_a_finished_wandb_run_ending_in_nan_is_stop_class_and_ends_monitoring(tmp_path):
    """Class 5: the check of a finished run whose loss ends in NaN judges it (stop: clearly bad) and its next
    action is to end monitoring, not to stop a run that is already gone."""
    run_dir = train(tmp_path / "train", steps=600, fault_step=400)
    done = cli("check", str(run_dir), "--json", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["snapshot"]["run_info"]["status"] == "finished"
    assert report["verdict"]["decision"] == "stop", report["summary"]
    assert report["next_action"] == "end_monitoring"
    assert report["schedule"]["monitoring"] is False
    assert "nothing left to stop" in report["summary"]


# --------------------------------------------------------------------------- 7. a log that stopped growing


def _healthy_jsonl(path: Path, steps: range, *, final_line: bool = False) -> None:
    lines = [json.dumps({"step": s, "loss": healthy_loss(s), "lr": 3e-4}) for s in steps]
    if final_line:  # what the HF Trainer prints once training is over
        lines.append(str({"train_runtime": 812.4, "train_samples_per_second": 9.1, "train_loss": 0.61, "epoch": 3.0}))
    with path.open("a") as fh:
        fh.write("\n".join(lines) + "\n")


def test_a_log_that_stopped_growing_keeps_its_interval_without_a_review(tmp_path):
    """Class 7: no new points is the launcher's business; the check says so, keeps the interval and asks for
    no review, however many checks see it."""
    log = tmp_path / "metrics.jsonl"
    _healthy_jsonl(log, range(600))
    home = tmp_path / "home"
    reports = [json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout) for _ in range(4)]
    stalled = reports[1:]
    assert all(r["verdict"]["decision"] == "continue" for r in stalled), [r["summary"] for r in stalled]
    assert all(r["next_action"] == "continue_monitoring" for r in stalled)
    intervals = [r["schedule"]["interval_minutes"] for r in reports]
    assert intervals[1] == intervals[2] == intervals[3], intervals
    assert "launcher" in stalled[-1]["summary"]


def test_a_log_ending_with_the_trainers_final_line_ends_monitoring(tmp_path):
    """Class 7: the run's own fact that it finished (the HF Trainer's closing line) ends monitoring."""
    log = tmp_path / "trainer.log"
    _healthy_jsonl(log, range(300))
    home = tmp_path / "home"
    first = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
    assert first["schedule"]["monitoring"] is True
    _healthy_jsonl(log, range(300, 600), final_line=True)
    for _ in range(2):  # the fact lasts: a later check of the unchanged log still ends monitoring
        report = json.loads(cli("check", str(log), "--json", home=home, cwd=tmp_path).stdout)
        assert report["snapshot"]["run_info"]["status"] == "finished", report["summary"]
        assert report["next_action"] == "end_monitoring"


def test_a_run_that_reached_its_total_steps_ends_monitoring(tmp_path):
    """Class 7: a log with no final line whose last step reached the configured total has finished."""
    log = tmp_path / "metrics.jsonl"
    _healthy_jsonl(log, range(1, 601))
    (tmp_path / "training-check.toml").write_text(f'[runs.job]\nrun = "{log}"\ntotal_steps = 600\n')
    report = json.loads(cli("check", "job", "--json", home=tmp_path / "home", cwd=tmp_path).stdout)
    assert report["verdict"]["decision"] == "continue", report["summary"]
    assert report["next_action"] == "end_monitoring"
    assert "reached its total of 600 steps" in report["schedule"]["reason"]
