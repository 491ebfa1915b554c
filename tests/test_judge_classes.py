"""One test per failure class of issue 9: what the judge got wrong on real public training runs.

Each test names its class. The arrays are realistic fragments (the shapes the issue describes); the
finished-run class goes through the real `training-check check` on a run written by wandb itself.
"""

from __future__ import annotations

import json

from tests.runs import train
from tests.test_cli import cli

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
