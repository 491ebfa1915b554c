"""training-check.toml: discovery, lookup, merging, overrides, and errors that name file:line."""

from __future__ import annotations

import inspect
import os
import textwrap
from pathlib import Path

import pytest

from mcp_training_check.config import (
    CONFIG_ENV,
    CONFIG_NAME,
    DEFAULT_REVIEW_MODEL,
    ProjectConfig,
    apply_overrides,
    key_lines,
    load_config,
)
from mcp_training_check.errors import ConfigError
from mcp_training_check.judge.runconfig import parse_run_config

FULL = """\
[defaults]
notes = "TRAINING_NOTES.md"
[defaults.review]
model = "claude-sonnet-4-5"
timeout_seconds = 60
enabled = true
[defaults.judge]
spike_ratio = 3.0
patience_checks = 3

[runs.bert]
run = "wandb/latest-run"
roles = { "train/loss" = "train_loss", "val/acc" = "eval_higher" }
baselines = { "val/acc" = 0.71 }
log_fallback = "logs/train.log"
notes = "notes/bert.md"
total_steps = 100000
judge = { patience_checks = 5 }
[runs.bert.stop]
pid_file = "train.pid"
signal = "TERM"
grace_seconds = 30
kill_after_grace = true

[runs.cloud]
run = "wandb:team/proj/abc12345"

[runs.remote]
run = "ssh://gpu-box/home/me/train.log/"
"""


def _write(directory: Path, text: str, name: str = CONFIG_NAME) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path) -> ProjectConfig:
    _write(tmp_path / "proj", FULL)
    return load_config(cwd=tmp_path / "proj")


# --------------------------------------------------------------------------- discovery


def test_file_in_working_directory(tmp_path) -> None:
    path = _write(tmp_path, FULL)
    assert load_config(cwd=tmp_path).path == path


def test_searched_upward_from_a_subdirectory(tmp_path) -> None:
    path = _write(tmp_path, FULL)
    deep = tmp_path / "src" / "models"
    deep.mkdir(parents=True)
    config = load_config(cwd=deep)
    assert config.path == path
    assert config.base_dir == tmp_path
    assert config.for_run("bert").run == str(tmp_path / "wandb" / "latest-run")


def test_search_stops_at_the_git_root(tmp_path) -> None:
    _write(tmp_path, FULL)  # above the repository: not this project's file
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert load_config(cwd=repo / "sub").path is None


def test_file_at_the_git_root_is_found(tmp_path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    path = _write(repo, FULL)
    (repo / "sub").mkdir()
    assert load_config(cwd=repo / "sub").path == path


def test_environment_variable_wins(tmp_path, monkeypatch) -> None:
    _write(tmp_path, FULL)
    chosen = _write(tmp_path / "elsewhere", "[runs.x]\nrun = 'a.log'\n", name="custom.toml")
    monkeypatch.setenv(CONFIG_ENV, str(chosen))
    config = load_config(cwd=tmp_path)
    assert config.path == chosen
    assert list(config.runs) == ["x"]


def test_environment_variable_must_point_at_a_file(tmp_path, monkeypatch) -> None:
    _write(tmp_path, FULL)
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=f"{CONFIG_ENV}=.*missing.toml.*unset it"):
        load_config(cwd=tmp_path)


def test_explicit_path_wins_and_must_exist(tmp_path) -> None:
    chosen = _write(tmp_path / "a", "[runs.x]\nrun = 'a.log'\n", name="other.toml")
    assert load_config(chosen, cwd=tmp_path).path == chosen
    with pytest.raises(ConfigError, match="not a file"):
        load_config(tmp_path / "nope.toml", cwd=tmp_path)


def test_no_file_means_built_in_defaults(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    config = load_config(cwd=tmp_path)
    assert (config.path, config.runs) == (None, {})
    resolved = config.for_run("logs/train.log")
    assert resolved.run == "logs/train.log"
    assert resolved.notes == tmp_path / "TRAINING_NOTES.md"
    assert resolved.review.model == DEFAULT_REVIEW_MODEL
    assert resolved.stop is None


# --------------------------------------------------------------------------- lookup and merge


def test_alias_lookup_merges_defaults_and_resolves_paths(project) -> None:
    base = project.base_dir
    resolved = project.for_run("bert")
    assert resolved.alias == "bert"
    assert resolved.run == str(base / "wandb" / "latest-run")
    assert resolved.roles == {"train/loss": "train_loss", "val/acc": "eval_higher"}
    assert resolved.baselines == {"val/acc": 0.71}
    assert resolved.log_fallback == base / "logs" / "train.log"
    assert resolved.notes == base / "notes" / "bert.md"
    assert resolved.total_steps == 100000
    assert resolved.judge == {"spike_ratio": 3.0, "patience_checks": 5}
    assert resolved.review.timeout_seconds == 60
    assert resolved.stop is not None
    assert (resolved.stop.pid_file, resolved.stop.signal) == (base / "train.pid", "TERM")


def test_run_without_own_settings_gets_the_defaults(project) -> None:
    resolved = project.for_run("cloud")
    assert resolved.notes == project.base_dir / "TRAINING_NOTES.md"
    assert resolved.judge == {"spike_ratio": 3.0, "patience_checks": 3}
    assert (resolved.stop, resolved.log_fallback, resolved.roles) == (None, None, {})
    assert resolved.run == "wandb:team/proj/abc12345"


@pytest.mark.parametrize(
    ("spelling", "alias"),
    [
        ("wandb/latest-run", "bert"),
        ("wandb/latest-run/", "bert"),
        ("./wandb/latest-run", "bert"),
        ("{base}/wandb/latest-run", "bert"),
        ("{base}/wandb/../wandb/latest-run/", "bert"),
        ("team/proj/abc12345", "cloud"),
        ("wandb:team/proj/abc12345/", "cloud"),
        ("team/proj/runs/abc12345", "cloud"),
        ("https://wandb.ai/team/proj/runs/abc12345?workspace=me", "cloud"),
        ("ssh://gpu-box/home/me/train.log", "remote"),
        ("bert", "bert"),
        (" bert ", "bert"),
        ("wandb/other-run", None),
        ("team/proj/zzz", None),
    ],
)
def test_lookup_by_run_value_in_any_spelling(project, spelling, alias) -> None:
    assert project.for_run(spelling.format(base=project.base_dir)).alias == alias


def test_run_value_is_found_from_a_subdirectory_by_absolute_path(tmp_path) -> None:
    _write(tmp_path, FULL)
    (tmp_path / "sub").mkdir()
    config = load_config(cwd=tmp_path / "sub")
    assert config.for_run("../wandb/latest-run").alias == "bert"


def test_existing_directory_shaped_like_a_wandb_id_is_a_path(tmp_path) -> None:
    _write(tmp_path, "[runs.local]\nrun = 'team/proj/abc12345'\n")
    (tmp_path / "team" / "proj" / "abc12345").mkdir(parents=True)
    assert load_config(cwd=tmp_path).for_run("local").run == str(tmp_path / "team" / "proj" / "abc12345")


def test_symlinks_in_run_paths_are_kept(tmp_path) -> None:
    _write(tmp_path, FULL)
    (tmp_path / "wandb" / "run-1").mkdir(parents=True)
    (tmp_path / "wandb" / "latest-run").symlink_to("run-1")
    assert load_config(cwd=tmp_path).for_run("bert").run.endswith("wandb/latest-run")


def test_two_entries_with_the_same_run_are_ambiguous(tmp_path) -> None:
    _write(tmp_path, "[runs.a]\nrun = 'x.log'\n[runs.b]\nrun = './x.log'\n")
    with pytest.raises(ConfigError, match=r"runs\.a, runs\.b .*alias"):
        load_config(cwd=tmp_path).for_run("x.log")


def test_total_steps_is_a_judge_hint(project) -> None:
    assert project.for_run("bert").judge_hints() == {"total_steps": 100000}
    assert project.for_run("cloud").judge_hints() == {}


def test_schedule_hints_reach_the_judge_under_training_config_names(tmp_path) -> None:
    _write(
        tmp_path,
        "[runs.x]\nrun = 'x.log'\ntotal_steps = 5000\nlearning_rate = 3e-4\nwarmup_steps = 100\n"
        "lr_schedule = 'cosine'\nmax_grad_norm = 1.0\n",
    )
    hints = load_config(cwd=tmp_path).for_run("x").judge_hints()
    assert hints == {
        "total_steps": 5000,
        "learning_rate": 3e-4,
        "warmup_steps": 100,
        "lr_scheduler_type": "cosine",
        "max_grad_norm": 1.0,
    }
    parsed = parse_run_config(hints)
    assert (parsed.total_steps, parsed.peak_lr, parsed.warmup_steps, parsed.schedule, parsed.max_grad_norm) == (
        5000,
        3e-4,
        100,
        "cosine",
        1.0,
    )


def test_a_bad_hint_names_its_line(tmp_path) -> None:
    _write(tmp_path, "[runs.x]\nrun = 'x.log'\nlearning_rate = -1.0\n")
    with pytest.raises(ConfigError, match=r"training-check.toml:3: runs\.x\.learning_rate"):
        load_config(cwd=tmp_path)


def test_signal_spellings_are_normalised(tmp_path) -> None:
    _write(tmp_path, "[runs.a]\nrun = 'x.log'\nstop = { pid = 4242, signal = 'sigkill' }\n")
    stop = load_config(cwd=tmp_path).for_run("a").stop
    assert stop is not None
    assert (stop.pid, stop.signal, stop.pid_file) == (4242, "KILL", None)


# --------------------------------------------------------------------------- overrides


def test_overrides_merge_roles_and_baselines_and_replace_the_fallback(project, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    resolved = apply_overrides(
        project.for_run("bert"),
        roles={"val/acc": "eval_lower", "lr": "learning_rate"},
        baselines={"val/loss": 1},
        log_fallback="other.log",
    )
    assert resolved.roles == {"train/loss": "train_loss", "val/acc": "eval_lower", "lr": "learning_rate"}
    assert resolved.baselines == {"val/acc": 0.71, "val/loss": 1.0}
    assert resolved.log_fallback == tmp_path / "other.log"  # a caller's path is relative to the caller


def test_no_overrides_change_nothing(project) -> None:
    resolved = project.for_run("bert")
    assert apply_overrides(resolved) == resolved


def test_stop_settings_cannot_be_overridden(project) -> None:
    resolved = project.for_run("bert")
    parameters = set(inspect.signature(apply_overrides).parameters)
    assert parameters == {"resolved", "roles", "baselines", "log_fallback"}
    with pytest.raises(TypeError):
        apply_overrides(resolved, stop={"pid": 1})  # type: ignore[call-arg]
    with pytest.raises(Exception, match="frozen"):
        resolved.stop = None  # type: ignore[misc]
    assert apply_overrides(resolved, roles={"a": "other"}).stop == resolved.stop


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"roles": {"val/acc": "accuracy"}},
            r"argument roles\['val/acc'\]: 'accuracy' is not one of train_loss",
        ),
        ({"baselines": {"val/acc": "high"}}, r"argument baselines\['val/acc'\]: expected a number"),
        ({"baselines": {"val/acc": float("nan")}}, "expected a number"),
        ({"log_fallback": " "}, "argument log_fallback: empty path"),
    ],
)
def test_bad_override_arguments_are_named(project, arguments, message) -> None:
    with pytest.raises(ConfigError, match=message):
        apply_overrides(project.for_run("bert"), **arguments)


# --------------------------------------------------------------------------- errors with file:line

BAD_INPUTS = [
    pytest.param(
        "[runs.bert]\nrun = 'x'\n\n[runs.bert.stop]\npid = 5\ngrace_seconds = '30'\n",
        6,
        "runs.bert.stop.grace_seconds: expected a number, got '30'",
        id="wrong-type",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\ncolour = 'red'\n",
        3,
        "runs.bert.colour: unknown key 'colour'; allowed keys: run, roles",
        id="unknown-key-in-run-table",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\n\nstop = { pid = 5, sgnal = 'KILL' }\n",
        4,
        "runs.bert.stop.sgnal: unknown key 'sgnal'; did you mean 'signal'?",
        id="unknown-key-in-inline-table",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\n[runs.bert.stop]\npid_file = 'train.pid'\nsignal = 'TERMINATE'\n",
        5,
        "runs.bert.stop.signal: 'TERMINATE' is not one of TERM, INT, KILL",
        id="bad-signal",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\nstop.signal = 'HUP'\nstop.pid = 7\n",
        3,
        "runs.bert.stop.signal: 'HUP' is not one of TERM, INT, KILL",
        id="bad-signal-dotted-key",
    ),
    pytest.param(
        "[defaults]\nnotes = 'n.md'\n\n[runs.bert]\nrun = 'x'\ntotal_steps = \n",
        6,
        ":6:15: Invalid value; fix the TOML syntax there.",
        id="toml-syntax-error",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\n[runs.gpt]\nroles = {}\n",
        3,
        "runs.gpt.run: required key 'run' is missing; add it.",
        id="missing-run",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\n\n[runs.bert.stop]\npid = 5\npid_file = 'p'\n",
        4,
        'runs.bert.stop: set exactly one of pid_file = "train.pid" or pid = 12345',
        id="pid-and-pid-file",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\n[runs.bert.stop]\nsignal = 'INT'\n",
        3,
        "runs.bert.stop: set exactly one of pid_file",
        id="no-pid",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\nstop = { pid = 1 }\n",
        3,
        "runs.bert.stop.pid: should be greater than 1, got 1.",
        id="pid-one",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\nroles = {\n",
        3,
        ":3:",
        id="unclosed-inline-table",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\nroles = { 'train/loss' = 'train_loss', \"val acc\" = 'accuracy' }\n",
        3,
        "runs.bert.roles.\"val acc\": 'accuracy' is not one of train_loss, eval, eval_lower, eval_higher, "
        "learning_rate, grad_norm, other, ignore.",
        id="unknown-role",
    ),
    pytest.param(
        "[defaults.judge]\nspike_ratio = 3.0\npatience = 'many'\n",
        3,
        "defaults.judge.patience: expected a number or true/false, got 'many'",
        id="judge-not-a-number",
    ),
    pytest.param(
        "[defaults]\nreview = { model = 'm', timeout = 5 }\n",
        2,
        "defaults.review.timeout: unknown key 'timeout'; did you mean 'timeout_seconds'?",
        id="unknown-key-in-defaults-inline-table",
    ),
    pytest.param(
        "[defaults.review]\nmodel = 'm'\ntimeout_seconds = 0\n",
        3,
        "defaults.review.timeout_seconds: should be greater than 0, got 0.",
        id="zero-timeout",
    ),
    pytest.param(
        '[runs.bert]\nrun = """\nmulti\n[line]\n"""\nnotes = ""\n',
        6,
        "runs.bert.notes: a path must not be empty",
        id="empty-path-after-multiline-string",
    ),
    pytest.param(
        "[runs.bert]\nrun = 'x'\nbaselines = { 'val/acc' = true }\n",
        3,
        'runs.bert.baselines."val/acc": expected a number, got True',
        id="bool-is-not-a-number",
    ),
    pytest.param("[run.bert]\nrun = 'x'\n", 1, "run: unknown key 'run'; did you mean 'runs'?", id="top-level-typo"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_INPUTS)
def test_bad_input_names_file_and_line(tmp_path, text, line, message) -> None:
    (tmp_path / CONFIG_NAME).write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    first = str(info.value).splitlines()[0]
    assert first.startswith(f"{CONFIG_NAME}:{line}:"), first
    assert message in first, first


def test_every_error_is_reported_in_line_order(tmp_path) -> None:
    (tmp_path / CONFIG_NAME).write_text("[runs.a]\nrun = 'x'\nbogus = 1\n[runs.b]\nrun = 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=tmp_path)
    lines = str(info.value).splitlines()
    assert [line.split(":")[1] for line in lines] == ["3", "5"]


def test_file_outside_the_working_directory_is_shown_by_absolute_path(tmp_path) -> None:
    path = _write(tmp_path / "conf", "[runs.a]\nrun = 3\n")
    (tmp_path / "work").mkdir()
    with pytest.raises(ConfigError, match=f"^{path}:2: runs.a.run: expected a string"):
        load_config(path, cwd=tmp_path / "work")


def test_file_that_is_not_utf8_is_an_error(tmp_path) -> None:
    (tmp_path / CONFIG_NAME).write_bytes(b"[runs.a]\nrun = '\xff'\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(cwd=tmp_path)


# --------------------------------------------------------------------------- key_lines


def test_key_lines_finds_headers_dotted_quoted_and_inline_keys() -> None:
    text = textwrap.dedent(
        """\
        # comment with [fake.header] and key = 1
        title = "a # not a comment"
        [runs."my run".stop]
        pid = 5 # trailing
        a.b."c.d" = { e = 1, f = { g = [1, 2] } }
        text = '''
        [not.a.header]
        nope = 1
        '''
        list = [
          { h = 1 },  # first
          { h = 2 },
        ]
        [[items]]
        name = "x"
        """
    )
    lines = key_lines(text)
    expected = {
        ("title",): 2,
        ("runs",): 3,
        ("runs", "my run"): 3,
        ("runs", "my run", "stop"): 3,
        ("runs", "my run", "stop", "pid"): 4,
        ("runs", "my run", "stop", "a", "b", "c.d"): 5,
        ("runs", "my run", "stop", "a", "b", "c.d", "f", "g"): 5,
        ("runs", "my run", "stop", "text"): 6,
        ("runs", "my run", "stop", "list", "1", "h"): 12,
        ("items",): 14,
        ("items", "name"): 15,
    }
    assert {key: lines.get(key) for key in expected} == expected
    assert not any("not" in key or "nope" in key or "fake" in key for key in lines)


def test_key_lines_prefers_an_explicit_table_over_an_implied_one() -> None:
    lines = key_lines("[runs.bert.stop]\npid = 5\n[runs.bert]\nrun = 'x'\n")
    assert lines[("runs", "bert")] == 3
    assert lines[("runs",)] == 1


def test_key_lines_handles_escaped_quotes_and_crlf() -> None:
    lines = key_lines('a = "say \\"[x]\\""\r\n"k\\"q" = 1\r\n[t]\r\nb = 2\r\n')
    assert lines == {("a",): 1, ('k"q',): 2, ("t",): 3, ("t", "b"): 4}


def test_defaults_file_keys_are_all_documented_in_the_module_docstring() -> None:
    import mcp_training_check.config.project as module
    from mcp_training_check.config import Defaults, ReviewSettings, RunEntry, StopSettings

    doc = module.__doc__ or ""
    for model in (Defaults, ReviewSettings, RunEntry, StopSettings):
        for field in model.model_fields:
            assert f"{field} " in doc or f"{field}]" in doc or f".{field}" in doc, field


def test_relative_config_path_argument_is_relative_to_cwd(tmp_path) -> None:
    _write(tmp_path / "conf", "[runs.a]\nrun = 'x.log'\n", name="c.toml")
    config = load_config(Path("conf/c.toml"), cwd=tmp_path)
    assert config.for_run("a").run == os.fspath(tmp_path / "conf" / "x.log")


def test_a_class_count_in_the_toml_or_a_wandb_config_reaches_the_judge(tmp_path) -> None:
    """`num_classes` in a run entry, or a W&B config's vocab_size / num_labels, is the chance level's N."""
    _write(tmp_path, "[runs.x]\nrun = 'x.log'\nnum_classes = 1000\n")
    hints = load_config(cwd=tmp_path).for_run("x").judge_hints()
    assert hints == {"num_classes": 1000}
    assert parse_run_config(hints).class_count == 1000
    assert parse_run_config({"vocab_size": {"value": 50257}}).class_count == 50257
    assert parse_run_config({"model": {"num_labels": 3}}).class_count == 3
    assert parse_run_config({"num_labels": 1}).class_count is None  # a regression head has no chance level
