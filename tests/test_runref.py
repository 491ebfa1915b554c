from __future__ import annotations

import pytest

from mcp_training_check.config import parse_run
from mcp_training_check.errors import RunNotFound, RunRefError
from mcp_training_check.models import RunKind


@pytest.mark.parametrize(
    ("raw", "kind", "fields"),
    [
        ("ssh://gpu-box/home/me/train.log", RunKind.SSH, {"host": "gpu-box", "path": "/home/me/train.log"}),
        ("ssh://me@gpu:2222/x/y.log", RunKind.SSH, {"host": "me@gpu:2222", "path": "/x/y.log"}),
        ("https://wandb.ai/acme/llm/runs/ab12cd34", RunKind.WANDB_API, {"entity": "acme", "run_id": "ab12cd34"}),
        ("https://wandb.ai/acme/llm/runs/ab12cd34/overview?x=1", RunKind.WANDB_API, {"project": "llm"}),
        ("wandb:acme/llm/ab12cd34", RunKind.WANDB_API, {"entity": "acme", "project": "llm"}),
        ("acme/llm/ab12cd34", RunKind.WANDB_API, {"run_id": "ab12cd34"}),
        ("wandb:acme/llm", RunKind.WANDB_PROJECT, {"entity": "acme", "project": "llm"}),
    ],
)
def test_remote_forms(raw, kind, fields):
    ref = parse_run(raw)
    assert ref.kind is kind
    for name, value in fields.items():
        assert getattr(ref, name) == value


def test_local_forms(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 1 | loss 2.0\n")
    run_dir = tmp_path / "wandb" / "run-20260101_000000-abc"
    run_dir.mkdir(parents=True)
    wandb_file = run_dir / "run-abc.wandb"
    wandb_file.write_bytes(b"")
    assert parse_run(str(log)).kind is RunKind.LOG_FILE
    assert parse_run(str(run_dir)).kind is RunKind.WANDB_DIR
    assert parse_run(str(wandb_file)).kind is RunKind.WANDB_FILE
    relative = parse_run("train.log", base_dir=tmp_path)
    assert relative.path == str(log)
    assert relative.key == f"file:{log}"


def test_bare_id_needs_entity_and_project(monkeypatch):
    monkeypatch.delenv("WANDB_ENTITY", raising=False)
    with pytest.raises(RunRefError, match="not an existing path"):
        parse_run("ab12cd34")
    monkeypatch.setenv("WANDB_ENTITY", "acme")
    monkeypatch.setenv("WANDB_PROJECT", "llm")
    assert parse_run("ab12cd34").key == "wandb:acme/llm/ab12cd34"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty"),
        ("ssh://gpu-box", "needs a host and a path"),
        ("https://example.com/some/page", "not a W&B run URL"),
        ("wandb:acme", "entity/project/run_id"),
        ("no/such/path/here/at/all", "not an existing path"),
    ],
)
def test_errors_say_what_to_pass(raw, message):
    with pytest.raises(RunRefError, match=message):
        parse_run(raw)


@pytest.mark.parametrize("raw", ["/no/such/run.log", "./missing/train.log", "logs/a/b.jsonl", "~/nope/x.wandb"])
def test_missing_local_paths_are_not_taken_for_wandb_ids(raw):
    with pytest.raises(RunNotFound, match="no such file"):
        parse_run(raw)


def test_a_missing_absolute_path_is_not_said_to_be_resolved_against_the_working_directory(tmp_path):
    """'/no/such/run.log' was "resolved against <cwd>" and told to "pass an absolute one"."""
    with pytest.raises(RunNotFound) as missing:
        parse_run(str(tmp_path / "logs" / "run.log"), base_dir=tmp_path / "elsewhere")
    assert "resolved against" not in str(missing.value) and "pass an absolute one" not in str(missing.value)
    assert f"{tmp_path / 'logs'} does not exist either" in str(missing.value)
    with pytest.raises(RunNotFound, match=r"resolved against .*pass an absolute one"):
        parse_run("logs/run.log", base_dir=tmp_path)


@pytest.mark.parametrize("typo", ["train.lgo", "metrics.jsnl", "trian.log"])
def test_a_mistyped_file_name_is_answered_with_the_file_it_may_mean(tmp_path, typo):
    """A typo of a file beside it said only "no such file" (or, without a known suffix, "not a known run form")."""
    for name in ("train.log", "metrics.jsonl", "notes.md"):
        (tmp_path / name).write_text("step 1 loss 2.0\n")
    with pytest.raises((RunRefError, RunNotFound), match=r"Did you mean '.*(train\.log|metrics\.jsonl)'\?") as missing:
        parse_run(typo, base_dir=tmp_path)
    assert "notes.md" not in str(missing.value)


def test_a_two_part_path_under_an_existing_directory_is_a_missing_path_not_a_project(tmp_path):
    """`runs/exp1` while runs/ exists here is a typo'd or not-yet-created path; `wandb:` names the project."""
    (tmp_path / "runs").mkdir()
    with pytest.raises(RunNotFound, match=r"no such file or directory.*write 'wandb:' before it"):
        parse_run("runs/exp1", base_dir=tmp_path)
    assert parse_run("wandb:runs/exp1", base_dir=tmp_path).kind is RunKind.WANDB_PROJECT
    assert parse_run("acme/llm", base_dir=tmp_path).kind is RunKind.WANDB_PROJECT  # no acme/ here


def test_a_missing_path_keeps_its_state_key_for_a_caller_that_does_not_read_it(tmp_path):
    """A stop needs the run's state key, not its log: the key of a deleted log is the key it had."""
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.0\n")
    existing = parse_run("train.log", base_dir=tmp_path)
    log.unlink()
    gone = parse_run("train.log", base_dir=tmp_path, missing_path_ok=True)
    assert gone.key == existing.key and gone.kind is RunKind.LOG_FILE
    assert parse_run("run-abc.wandb", base_dir=tmp_path, missing_path_ok=True).kind is RunKind.WANDB_FILE
    with pytest.raises(RunNotFound):
        parse_run("train.log", base_dir=tmp_path)


@pytest.mark.parametrize(
    "raw",
    ["wandb/latest-run", "wandb/latst-run", "wandb/run-20260101_000000-ab12cd34", "exp/wandb/latest-run",
     "wandb/offline-run-20260101_000000-ab12cd34"],
)
def test_wandbs_own_directory_names_are_missing_paths_not_wandb_projects(raw, tmp_path):
    """The README's first command, `check wandb/latest-run`, run where there is no wandb/ directory was read as
    the W&B project 'latest-run' of the entity 'wandb' and answered "no W&B API key … run `wandb login`";
    `exp/wandb/latest-run` as the W&B run 'latest-run'. Only wandb's own run directories have these names."""
    with pytest.raises(RunNotFound, match=r"no such file or directory.*directory the training ran in"):
        parse_run(raw, base_dir=tmp_path)
    assert parse_run(f"wandb:{raw}", base_dir=tmp_path).kind in (RunKind.WANDB_PROJECT, RunKind.WANDB_API)


@pytest.mark.parametrize(
    ("raw", "meant"),
    [("ssh:/gpu-box/home/me/train.log", "ssh://gpu-box/home/me/train.log"),
     ("ssh:gpu-box/x.log", "ssh://gpu-box/x.log"),
     ("https:/wandb.ai/acme/llm/runs/ab12cd34", "https://wandb.ai/acme/llm/runs/ab12cd34")],
)
def test_a_url_with_a_missing_slash_says_which_form_was_meant(raw, meant, tmp_path):
    """Before, `ssh:/gpu-box/...` was taken for a local path: "no such file or directory"."""
    with pytest.raises(RunRefError, match=f"did you mean '{meant}'"):
        parse_run(raw, base_dir=tmp_path)
