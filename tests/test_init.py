"""`training-check init`: a run entry added to training-check.toml, then checked and stopped through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_training_check.config import load_config

from .test_cli import cli, healthy_loss


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()  # the config search stops at the project's root, as in a real checkout
    lines = [json.dumps({"step": s, "loss": healthy_loss(s), "eval/acc": 0.5 + s / 2000}) for s in range(400)]
    (root / "train.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_an_entry_made_by_init_is_checked_and_stopped_by_its_alias(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    training = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        (root / "train.pid").write_text(f"{training.pid}\n")
        time.sleep(0.05)  # the pid file must not be older than the process it names
        os.utime(root / "train.pid")
        made = cli("init", "bert", "train.jsonl", "--stop", "pid_file=train.pid", "--baseline", "eval/acc=0.6",
                   "--total-steps", "1000", home=home, cwd=root)  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert "[runs.bert]" in made.stdout and "training-check check bert" in made.stdout
        checked = cli("check", "bert", "--json", home=home, cwd=root)
        assert checked.returncode == 0, checked.stderr
        report = json.loads(checked.stdout)
        assert report["snapshot"]["run_info"]["config"]["total_steps"] == 1000
        assert not any("baseline" in w for w in report["snapshot"].get("warnings", []))  # eval/acc exists
        stopped = cli("stop", "bert", "--confirm", "--reason", "test of init", "--json", home=home, cwd=root)
        assert stopped.returncode == 0, stopped.stderr
        result = json.loads(stopped.stdout)
        assert result["outcome"] == "stopped" and result["verified"] and result["incident_id"] is not None
        assert training.wait(timeout=30) is not None
    finally:
        training.kill()
        training.wait()


def test_init_appends_to_an_existing_file_and_keeps_every_byte_of_it(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    before = '# our runs\n[defaults]\nnotes = "NOTES.md"   # kept\n\n[runs.old]\nrun = "train.jsonl"\n'
    (root / "training-check.toml").write_text(before)
    made = cli("init", "new", "train.jsonl", "--role", "eval/acc=eval_higher", home=home, cwd=root)
    assert made.returncode == 0, made.stderr
    after = (root / "training-check.toml").read_text()
    assert after.startswith(before)
    config = load_config(cwd=root)
    assert set(config.runs) == {"old", "new"}
    assert config.runs["new"].roles == {"eval/acc": "eval_higher"}
    assert "stop_run will refuse it" in made.stdout  # no --stop: said, not silently unstoppable


def test_a_second_entry_of_the_same_name_is_refused_and_the_file_left_alone(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    assert cli("init", "bert", "train.jsonl", home=home, cwd=root).returncode == 0
    before = (root / "training-check.toml").read_bytes()
    again = cli("init", "bert", "other.log", home=home, cwd=root)
    assert again.returncode == 2
    assert "already has [runs.bert]" in again.stderr and "pick another name" in again.stderr
    assert (root / "training-check.toml").read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stop", "kill=3"], "pid_file=train.pid"),
        (["--stop", "pid=abc"], "a pid is a whole number"),
        (["--stop", "wandb=x"], "write it as one of"),
        (["--stop", "tmux=a.b"], "nothing was written"),
        (["--baseline", "eval/acc=high"], "finite number"),
        (["--role", "eval/acc=best"], "eval_higher"),
        (["--stop", "wandb"], "--stop pid_file=train.pid"),  # a log file: was written, refused at the stop itself
    ],
)
def test_a_bad_value_is_refused_naming_the_fix_and_no_file_is_made(tmp_path, args, message):
    root, home = project(tmp_path), tmp_path / "home"
    made = cli("init", "bert", "train.jsonl", *args, home=home, cwd=root)
    assert made.returncode == 2
    assert message in made.stderr and made.stderr.count("\n") == 1
    assert not (root / "training-check.toml").exists()
    assert not list(root.glob(".training-check.toml.*"))  # no temporary file left behind


def test_a_mistyped_run_url_is_refused_before_anything_is_written(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    made = cli("init", "gpu", "ssh:/gpu-box/run/train.log", home=home, cwd=root)
    assert made.returncode == 2 and "did you mean 'ssh://gpu-box/run/train.log'" in made.stderr
    assert not (root / "training-check.toml").exists()


def test_stops_of_a_run_on_another_machine_act_on_that_machine(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    for name, run, stop in [
        ("pidhost", "ssh://gpu-box/home/me/run/train.log", "pid_file=/home/me/run/train.pid"),
        ("tmuxhost", "ssh://gpu-box/home/me/run/train.log", "tmux=exp1"),
        ("job", "train.jsonl", "slurm=123_4"),
        ("named", "train.jsonl", "slurm=bert-large"),
        ("cloud", "acme/llm/ab12cd34", "wandb"),
    ]:
        made = cli("init", name, run, "--stop", stop, home=home, cwd=root)
        assert made.returncode == 0, made.stderr
    runs = load_config(cwd=root).runs
    assert runs["pidhost"].stop is not None and runs["pidhost"].stop.method == "ssh"
    assert str(runs["pidhost"].stop.pid_file) == "/home/me/run/train.pid"
    assert runs["tmuxhost"].stop is not None and runs["tmuxhost"].stop.remote
    assert runs["job"].stop is not None and runs["job"].stop.job_id == "123_4"
    assert runs["named"].stop is not None and runs["named"].stop.job_name == "bert-large"
    assert runs["cloud"].stop is not None and runs["cloud"].stop.method == "wandb"


def test_a_name_toml_cannot_write_bare_is_quoted_and_still_an_alias(tmp_path):
    root, home = project(tmp_path), tmp_path / "home"
    made = cli("init", "my run.v2", "train.jsonl", home=home, cwd=root)
    assert made.returncode == 0, made.stderr
    assert '[runs."my run.v2"]' in (root / "training-check.toml").read_text()
    assert '[runs."my run.v2".stop] says how to stop it' in made.stdout, "it said [runs.my run.v2.stop]"
    checked = cli("check", "my run.v2", "--json", home=home, cwd=root)
    assert checked.returncode == 0, checked.stderr
    kept = cli("forget", "my run.v2", home=home, cwd=root)
    assert kept.returncode == 2 and "forget 'my run.v2' --yes" in kept.stderr, "the command it names must run"
    (root / "train.jsonl").rename(root / "moved.jsonl")
    missing = cli("check", "my run.v2", home=home, cwd=root)
    assert missing.returncode == 2 and '(runs."my run.v2".run in ' in missing.stderr, missing.stderr


def test_init_of_a_log_not_written_yet_is_accepted_and_says_so(tmp_path):
    """An entry for a training not started yet is fine, but init wrote a typo'd log path without a word."""
    root = project(tmp_path)
    made = cli("init", "later", "logs/train.jsonl", home=tmp_path / "home", cwd=root)
    assert made.returncode == 0, made.stderr
    assert f"note: {root / 'logs' / 'train.jsonl'} does not exist yet" in made.stdout
    there = cli("init", "now", "train.jsonl", home=tmp_path / "home", cwd=root)
    assert there.returncode == 0 and "does not exist" not in there.stdout, there.stdout


def test_stop_of_an_entry_without_a_stop_table_names_that_table(tmp_path):
    """init without --stop says stop_run will refuse until [runs.NAME.stop] exists; the refusal itself said
    "add a [runs.<name>.stop] table", as if the run had no entry."""
    root, home = project(tmp_path), tmp_path / "home"
    made = cli("init", "bert", "train.jsonl", home=home, cwd=root)
    assert "until [runs.bert.stop] says how" in made.stdout
    refused = cli("stop", "bert", "--confirm", "--reason", "diverged", home=home, cwd=root)
    assert refused.returncode == 2 and "add a [runs.bert.stop] table to its entry" in refused.stderr, refused.stderr
