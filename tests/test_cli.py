"""The command line, as a person runs it: a subprocess per call, state carried on disk between calls."""

from __future__ import annotations

import argparse
import json
import math
import os
import pty
import select
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_training_check.cli import build_parser

DECISIONS = {"stop", "continue", "unsure"}


def cli(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINING_CHECK_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "mcp_training_check", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def healthy_loss(step: int) -> float:
    return 0.5 + 2.5 * math.exp(-step / 300) + 0.02 * math.sin(step * 1.7)


def write_formats(root: Path, steps: int = 600) -> dict[str, Path]:
    files = {
        "jsonl": root / "metrics.jsonl",
        "csv": root / "metrics.csv",
        "hf": root / "trainer.log",
        "printed": root / "train.log",
    }
    jsonl, csv, hf, printed = [], ["step,loss,lr"], [], []
    for step in range(steps):
        loss, lr = healthy_loss(step), 3e-4
        jsonl.append(json.dumps({"step": step, "loss": loss, "lr": lr}))
        csv.append(f"{step},{loss},{lr}")
        hf.append(str({"loss": round(loss, 4), "grad_norm": 1.1, "learning_rate": lr, "epoch": step / 100}))
        printed.append(f"step {step} | loss {loss:.4f} | lr {lr:.1e}")
    files["jsonl"].write_text("\n".join(jsonl) + "\n")
    files["csv"].write_text("\n".join(csv) + "\n")
    files["hf"].write_text("\n".join(hf) + "\n")
    files["printed"].write_text("\n".join(printed) + "\n")
    return files


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "hf", "printed"])
def test_check_json_on_every_log_format(tmp_path, fmt):
    path = write_formats(tmp_path)[fmt]
    done = cli("check", str(path), "--json", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"]["decision"] == "continue", report["verdict"]
    assert report["snapshot"]["metrics"][0]["role"] == "train_loss"
    assert report["snapshot"]["summary"].endswith(", status unknown"), "not 'run unknown': a run not found?"
    assert report["schedule"]["cron_create"]["prompt"].startswith("/training-check ")


def test_readable_output_and_baseline_and_role_flags(tmp_path):
    path = tmp_path / "run.jsonl"
    rows = [{"step": s, "loss": healthy_loss(s)} for s in range(400)]
    rows += [{"step": s, "val_score": 0.40} for s in range(100, 400, 100)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    done = cli(
        "check", str(path), "--baseline", "val_score=0.9", "--role", "val_score=eval_higher",
        home=tmp_path / "home", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "verdict" in done.stdout and "val_score" in done.stdout
    assert "STOP" in done.stdout or "UNSURE" in done.stdout


def test_readable_check_names_the_command_that_acts_on_a_stop_or_an_unsure_verdict(tmp_path):
    """The readable output left `next_action` out: a STOP verdict ended in "next check in 10 min" and no word
    of stopping, an unsure one in no word of the reviewer."""
    nan = tmp_path / "nan run.jsonl"
    rows = [{"step": s, "loss": healthy_loss(s) if s < 300 else float("nan")} for s in range(400)]
    nan.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    flat = tmp_path / "flat.jsonl"
    flat.write_text("\n".join(json.dumps({"step": s, "loss": 2.3 + 0.01 * math.sin(s)}) for s in range(300)) + "\n")
    stopped = cli("check", str(nan), home=tmp_path / "home", cwd=tmp_path)
    assert stopped.stdout.count("non-finite value(s) of loss") == 1, "the verdict's signal listed again under it"
    [action] = [line for line in stopped.stdout.splitlines() if line.startswith("action ")]
    assert action.startswith("action   stop the run: training-check stop ")
    assert "--confirm --reason 'loss is NaN" in action
    assert action.endswith("'") and not action.endswith(".'") and "(+" not in action, "the reason's first clause"
    pasted = cli(*shlex.split(action.split(": ", 1)[1])[1:], home=tmp_path / "home", cwd=tmp_path)
    assert pasted.returncode == 2 and "no way to stop run" in pasted.stderr, "the CLI accepts the command as printed"
    lines = stopped.stdout.splitlines()
    note = lines[lines.index(action) + 1]
    assert note.startswith("  ! no way to stop run") and "[runs.<name>.stop]" in note, "said before it is pasted"
    assert "no way to stop" not in cli("check", str(nan), "--json", home=tmp_path / "home", cwd=tmp_path).stdout
    (tmp_path / "training-check.toml").write_text(f'[runs.nan]\nrun = "{nan.name}"\n[runs.nan.stop]\npid = 999999\n')
    configured = cli("check", "nan", home=tmp_path / "home2", cwd=tmp_path)
    assert "stop the run: training-check stop nan" in configured.stdout and " ! " not in configured.stdout
    unsure = cli("check", str(flat), home=tmp_path / "home", cwd=tmp_path)
    assert "UNSURE" in unsure.stdout and f"action   unsure: ask the reviewer with `training-check review {flat}`" in (
        unsure.stdout
    )
    healthy = cli("check", str(write_formats(tmp_path)["jsonl"]), home=tmp_path / "home", cwd=tmp_path)
    assert "CONTINUE" in healthy.stdout and "action " not in healthy.stdout


def test_the_table_lists_numbered_evals_in_natural_order(tmp_path):
    """Text order listed eval/task10 before eval/task2 (a QA sweep's find)."""
    path = tmp_path / "evals.jsonl"
    rows = [{"step": s, "loss": healthy_loss(s)} for s in range(300)]
    rows += [{"step": s, f"eval/task{n}": 0.5 + s / 1000} for s in range(50, 300, 50) for n in (10, 2, 1)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    done = cli("check", str(path), home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.strip().startswith("eval/task")]
    assert listed == ["eval/task1", "eval/task2", "eval/task10"], done.stdout


def test_a_table_too_long_lists_the_metrics_that_read_nan_and_counts_the_rest_by_role(tmp_path):
    """A YOLO segmenter logs 4 train losses, 8 scores and 4 val losses: the 12 rows the table shows once listed the
    scores and hid the val losses whose NaN the verdict stopped on, saying the hidden ones were "role: other"."""
    scores = [f"metrics/{kind}({head})" for head in "BM" for kind in ("precision", "recall", "mAP50", "mAP50-95")]
    columns = [f"train/{t}_loss" for t in ("box", "seg", "cls", "dfl")] + scores
    columns += [f"val/{t}_loss" for t in ("box", "seg", "cls", "dfl")] + ["lr/pg0", "lr/pg1"]
    rows = [",".join(["epoch", *columns])]
    for epoch in range(1, 6):
        losses = [f"{1.5 / epoch:.4f}"] * 4
        rows.append(",".join([str(epoch), *losses, *["0"] * 8, *["nan"] * 4, "0.001", "0.001"]))
    (tmp_path / "results.csv").write_text("\n".join(rows) + "\n")
    done = cli("check", "results.csv", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ") and "/" in line[:40]]
    assert {"val/box_loss", "val/seg_loss", "val/cls_loss", "val/dfl_loss"} <= set(listed), done.stdout
    note = next(line for line in done.stdout.splitlines() if "more metrics stored but not listed" in line)
    assert "role: other" not in note and "eval" in note and "learning_rate" in note, note


def test_a_baseline_or_role_for_a_metric_the_run_lacks_is_named_in_the_warnings(tmp_path):
    """Before, `--baseline val_scor=0.9` (a typo) was dropped without a word: the user believed the run was
    judged against the baseline. It stays a warning, not an error: a metric may appear later in a run."""
    path = tmp_path / "run.jsonl"
    rows = [{"step": s, "loss": healthy_loss(s), "val_score": 0.4} for s in range(0, 400, 10)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    done = cli(
        "check", str(path), "--json", "--baseline", "val_scor=0.9", "--role", "val_score=eval_higher",
        "--role", "Loss=train_loss", home=tmp_path / "home", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warnings = json.loads(done.stdout)["snapshot"]["warnings"]
    unmatched = [w for w in warnings if "no metric of this run" in w]
    assert len(unmatched) == 1, warnings
    assert "baseline 'val_scor'" in unmatched[0] and "role 'Loss'" in unmatched[0]
    assert "val_score" not in unmatched[0].split("metrics read:")[0].replace("'val_scor'", "")
    assert "metrics read: loss, val_score" in unmatched[0]


def test_a_mistyped_alias_or_an_entrys_missing_log_is_traced_to_training_check_toml(tmp_path):
    """Before, `check bertt` (the alias is bert) said only "not an existing path or a known run form", and an
    entry whose log is missing named the resolved path but not the entry: neither pointed at the file."""
    (tmp_path / "train.log").write_text("step 1 | loss 2.0\n")
    (tmp_path / "training-check.toml").write_text(
        '[runs.bert]\nrun = "train.log"\n[runs.gpt]\nrun = "logs/gone.log"\n'
    )
    typo = cli("check", "bertt", home=tmp_path / "home", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean the alias 'bert'" in typo.stderr, typo.stderr
    gone = cli("check", "gpt", home=tmp_path / "home", cwd=tmp_path)
    assert gone.returncode == 2 and "logs/gone.log" in gone.stderr, gone.stderr
    assert f"runs.gpt.run in {tmp_path / 'training-check.toml'}" in gone.stderr
    assert "Traceback" not in typo.stderr + gone.stderr
    unknown = cli("check", "nosuch", home=tmp_path / "home", cwd=tmp_path)
    assert unknown.returncode == 2, unknown.stderr
    assert f"The runs {tmp_path / 'training-check.toml'} names: bert, gpt." in unknown.stderr, "no alias was close"


def test_a_w_and_b_run_whose_fallback_fails_too_is_told_to_fix_the_fallback(tmp_path, monkeypatch):
    """W&B refused (nothing listens) and the entry's log_fallback missing: the warnings told the user to "set
    log_fallback for this run" (it is set) and to "point `run` at the training's log file" (the log is the
    fallback's)."""
    (tmp_path / "training-check.toml").write_text('[runs.llm]\nrun = "acme/llm/ab12cd34"\nlog_fallback = "train.log"\n')
    monkeypatch.setenv("WANDB_API_KEY", "a" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    done = cli("check", "llm", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "refused the connection" in done.stdout and "point `log_fallback` at" in done.stdout, done.stdout
    assert "set log_fallback" not in done.stdout and "point `run` at" not in done.stdout, done.stdout


def test_every_command_says_what_it_does_in_its_own_help():
    """`plot --help`, `stop --help`, `review --help` and five more printed only usage and options: what the
    command does was in the top-level listing alone. And --role did not list the roles it takes."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        listed = next(choice.help for choice in commands._choices_actions if choice.dest == name)
        assert listed and listed in " ".join(sub.format_help().split()), f"`{name} --help` lacks: {listed}"
    check_help = " ".join(commands.choices["check"].format_help().split())
    assert "eval_higher" in check_help and "repeatable" in check_help


def test_schedule_of_a_run_never_checked_names_the_check_to_run_first(tmp_path):
    path = write_formats(tmp_path)["jsonl"]
    refused = cli("schedule", str(path), home=tmp_path / "home", cwd=tmp_path)
    assert refused.returncode == 2 and "CronCreate" not in refused.stdout
    assert "has no check yet" in refused.stderr and f"`training-check check {path}`" in refused.stderr
    assert cli("check", str(path), home=tmp_path / "home", cwd=tmp_path).returncode == 0
    assert "CronCreate" in cli("schedule", str(path), home=tmp_path / "home", cwd=tmp_path).stdout


def test_schedule_takes_the_review_in_any_case_as_the_tool_does():
    """schedule_next takes 'wait'; `schedule --review wait` was "invalid choice: 'wait'"."""
    assert build_parser().parse_args(["schedule", "x.log", "--review", "wait"]).review == "WAIT"


def test_serve_on_a_terminal_says_it_waits_for_an_mcp_client_and_how_to_quit(tmp_path):
    """`training-check serve` typed at a terminal waited in silence, and Ctrl-C did not end it (the SDK reads
    stdin in a thread): a new user could not tell it was running, nor how to leave."""
    terminal, keyboard = pty.openpty()
    env = {**os.environ, "TRAINING_CHECK_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "mcp_training_check", "serve"], stdin=keyboard,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "serve said nothing on a terminal"
        line = proc.stderr.readline()
        assert "waiting for an MCP client" in line and "claude mcp add" in line and "Ctrl-D quits" in line
        os.write(terminal, b"\x04")
        assert proc.wait(timeout=30) == 0, "Ctrl-D ends it, as the line says"
    finally:
        proc.kill()
        os.close(terminal)
        os.close(keyboard)


def test_an_unusable_training_check_home_is_named_as_the_cause(tmp_path):
    """TRAINING_CHECK_HOME naming a file: "cannot create the state directory X ([Errno 17] File exists: 'X');
    set TRAINING_CHECK_HOME", when that variable was what named X."""
    (tmp_path / "x.log").write_text("step 1 | loss 2.0\n")
    (tmp_path / "a-file").write_text("")
    done = cli("check", "x.log", home=tmp_path / "a-file", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"cannot create the state directory {tmp_path / 'a-file'} (File exists): it comes from " in done.stderr
    assert "TRAINING_CHECK_HOME: point that at a directory" in done.stderr and "Errno" not in done.stderr


@pytest.mark.parametrize("args", [["--host", "0.0.0.0"], ["--token", "t0ken"]])
def test_serve_refuses_http_options_without_http(tmp_path, args):
    """Before, `serve --host 0.0.0.0` (no --http) dropped --host and served stdio: the person believed the
    server listened on the network."""
    done = cli("serve", *args, home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{args[0]} applies to --http PORT" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "/no/such/file.log"], "/no/such/file.log"),
        (["check", "x.log", "--baseline", "acc"], "KEY=VALUE"),
        (["check", "x.log", "--role", "acc=best"], "train_loss"),
        (["stop", "x.log", "--reason", "loss NaN"], "add --confirm once the verdict is stop"),
    ],
)
def test_errors_are_one_line_with_the_fix(tmp_path, args, message):
    (tmp_path / "x.log").write_text("step 1 | loss 2.0\n")
    done = cli(*args, home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_incremental_checks_back_off(tmp_path):
    path = write_formats(tmp_path)["printed"]
    intervals = []
    for _ in range(4):
        done = cli("check", str(path), "--json", home=tmp_path / "home", cwd=tmp_path)
        intervals.append(json.loads(done.stdout)["schedule"]["interval_minutes"])
        with path.open("a") as handle:
            start = 600 + 100 * len(intervals)
            handle.writelines(
                f"step {s} | loss {healthy_loss(s):.4f} | lr 3.0e-04\n" for s in range(start, start + 100)
            )
    assert intervals == [10, 20, 30, 60]


def test_every_command_calls_its_run_argument_run_as_the_readme_and_the_tools_do():
    """Usage lines said `source` (`training-check stop [-h] ... source`; "the following arguments are
    required: source") where the README writes `training-check stop RUN` and every tool takes `run`."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    named = {
        name: [a.metavar or a.dest for a in sub._actions if not a.option_strings and a.dest != "help"]
        for name, sub in commands.choices.items()
    }
    with_a_run = {
        name: args for name, args in named.items() if "source" in {a.dest for a in commands.choices[name]._actions}
    }
    assert len(with_a_run) >= 8 and all(args[0] == "run" for args in with_a_run.values()), named
    usage = commands.choices["stop"].format_usage()
    assert usage.rstrip().endswith(" run") and "source" not in usage


def test_a_project_with_one_run_is_checked_without_naming_it(tmp_path):
    """`training-check check` with no run was a usage error even when training-check.toml names a single run;
    now it checks that run, and with none or several configured it says which to name (stop and forget still
    need the run spelled out: they act on it)."""
    (tmp_path / ".git").mkdir()  # the project root: the file search stops here
    (tmp_path / "train.log").write_text("".join(f"step {s} | loss {healthy_loss(s):.4f}\n" for s in range(200)))
    none = cli("check", home=tmp_path / "home", cwd=tmp_path)
    assert none.returncode == 2 and "training-check check RUN" in none.stderr, none.stderr
    assert "training-check init NAME RUN" in none.stderr
    (tmp_path / "training-check.toml").write_text('[runs.bert]\nrun = "train.log"\n')
    one = cli("check", "--json", home=tmp_path / "home", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["snapshot"]["new_points"] > 0
    again = cli("schedule", "--json", home=tmp_path / "home", cwd=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["interval_minutes"] > 0, again.stderr
    (tmp_path / "training-check.toml").write_text('[runs.bert]\nrun = "train.log"\n[runs.gpt]\nrun = "train.log"\n')
    two = cli("judge", home=tmp_path / "home", cwd=tmp_path)
    assert two.returncode == 2 and "names 2 runs (bert, gpt): say which" in two.stderr, two.stderr
    refused = cli("stop", "--confirm", "--reason", "x", home=tmp_path / "home", cwd=tmp_path)
    assert refused.returncode == 2 and "required: run" in refused.stderr, refused.stderr


def test_an_empty_log_is_read_with_nothing_to_judge_not_unreadable(tmp_path: Path) -> None:
    """A log the training has not written to yet was read, and its check said "nothing could be read" (the
    words of an unreachable source)."""
    (tmp_path / "train.log").write_text("")
    done = cli("check", "train.log", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "verdict  none: no metrics logged yet, nothing to judge" in done.stdout, done.stdout
    assert "nothing could be read" not in done.stdout
