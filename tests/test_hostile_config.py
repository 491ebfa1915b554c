"""Broken configs, run strings and command lines get one line naming the problem, the place and the fix, never
a traceback: TOML nested thousands deep, a NaN or infinite threshold, ssh:// URLs with a bad port or an
unclosed IPv6 bracket, `serve --http` on a port that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_training_check.config import load_config, parse_run
from mcp_training_check.errors import ConfigError, RunRefError, TrainingCheckError
from mcp_training_check.serving.http import serve_http


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "training-check.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("[" * 100_000 + "]" * 100_000, 4),
        ("{a = " * 2_000 + "1" + "}" * 2_000, 4),
        ("[\n" * 40 + "]" * 40, 4 + 32),  # the line where the 33rd level opens
        ("[" * 300 + "]" * 300, 4),  # deep enough for tomllib to recurse past its limit
    ],
    ids=["arrays 100,000 deep", "inline tables 2,000 deep", "over many lines", "300 deep"],
)
def test_deeply_nested_toml_names_the_line(tmp_path: Path, value: str, line: int) -> None:
    path = config(tmp_path, f'[runs.a]\nrun = "x.log"\n\nroles = {value}\n')
    with pytest.raises(ConfigError, match=rf"^training-check\.toml:{line}: nesting too deep at line {line} "):
        load_config(path, cwd=tmp_path)


def test_brackets_in_strings_and_comments_are_not_nesting(tmp_path: Path) -> None:
    text = (
        '[runs.a]\nrun = "x.log"  # ' + "[" * 100 + '\nnotes = "' + "{" * 100 + "\"\nlr_schedule = '" + "[" * 50 + "'\n"
    )
    loaded = load_config(config(tmp_path, text), cwd=tmp_path)
    assert loaded.runs["a"].lr_schedule == "[" * 50


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_non_finite_judge_threshold_names_the_key_and_line(tmp_path: Path, value: str) -> None:
    path = config(tmp_path, f"[defaults]\nnotes = 'n.md'\n\n[defaults.judge]\ntrend_divergence_ratio = {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, cwd=tmp_path)
    assert str(caught.value).startswith(
        "training-check.toml:5: defaults.judge.trend_divergence_ratio: expected a finite"
    )


def test_non_finite_run_threshold_names_the_key_and_line(tmp_path: Path) -> None:
    path = config(tmp_path, '[runs.a]\nrun = "x.log"\njudge = { spike_z = nan }\n')
    with pytest.raises(ConfigError, match=r"^training-check\.toml:3: runs\.a\.judge\.spike_z: expected a finite"):
        load_config(path, cwd=tmp_path)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('baselines = { "eval/acc" = nan }', 'runs.a.baselines."eval/acc"'),
        ("learning_rate = inf", "runs.a.learning_rate"),
        ("max_grad_norm = nan", "runs.a.max_grad_norm"),
    ],
)
def test_non_finite_numbers_anywhere_in_the_file_are_refused(tmp_path: Path, text: str, where: str) -> None:
    path = config(tmp_path, f'[runs.a]\nrun = "x.log"\n{text}\n')
    with pytest.raises(ConfigError, match=rf"^training-check\.toml:3: {where.replace('.', '[.]')}: should be a finite"):
        load_config(path, cwd=tmp_path)


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("ssh://127.0.0.1:99999/x", "port '99999' is not a number from 1 to 65535"),
        ("ssh://127.0.0.1:abc/x", "port 'abc' is not a number from 1 to 65535"),
        ("ssh://127.0.0.1:0/x", "port '0' is not a number from 1 to 65535"),
        ("ssh://me@host:70000/x", "port '70000' is not a number from 1 to 65535"),
        ("ssh://[::1/x", "an IPv6 address needs both brackets: [::1]"),
    ],
)
def test_bad_ssh_urls_name_the_problem(run: str, expected: str) -> None:
    with pytest.raises(RunRefError) as caught:
        parse_run(run)
    assert f"`run` {run!r} is not a valid ssh:// URL ({expected}): e.g. ssh://gpu-box/" in str(caught.value)


def test_ipv6_ssh_host_keeps_its_brackets_to_the_connection() -> None:
    from mcp_training_check.errors import SourceUnavailable
    from mcp_training_check.sources.ssh_connect import resolve_target

    ref = parse_run("ssh://me@[::1]:2222/home/me/train.log")
    assert ref.host == "me@[::1]:2222"
    target = resolve_target(ref.host or "", SourceUnavailable)
    assert (target.hostname, target.port, target.user) == ("::1", 2222, "me")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_training_check", *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env={**os.environ, "TRAINING_CHECK_HOME": str(cwd / "home")},
    )  # fmt: skip


@pytest.mark.parametrize("port", ["99999", "65536", "abc", "-1"])
def test_serve_on_a_port_that_does_not_exist_is_a_usage_error(tmp_path: Path, port: str) -> None:
    result = run_cli("serve", "--http", port, cwd=tmp_path)
    assert result.returncode == 2
    assert f"argument --http: {port!r} is not a port number from 0 to 65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_http_itself_refuses_a_port_out_of_range() -> None:
    with pytest.raises(TrainingCheckError, match="port 99999 is not a port number from 0 to 65535"):
        serve_http(None, host="127.0.0.1", port=99999, token=None)  # type: ignore[arg-type]


def test_cli_reports_a_nested_config_without_a_traceback(tmp_path: Path) -> None:
    config(tmp_path, '[runs.a]\nrun = "x.log"\nroles = ' + "[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "x.log").write_text("step 1 loss 2.0\n")
    result = run_cli("check", "x.log", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "training-check.toml:3: nesting too deep at line 3" in result.stderr


@pytest.mark.parametrize("run", ["ssh://127.0.0.1:99999/x", "ssh://127.0.0.1:abc/x", "ssh://[::1/x"])
def test_cli_reports_a_bad_ssh_url_without_a_traceback(tmp_path: Path, run: str) -> None:
    result = run_cli("check", run, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "is not a valid ssh:// URL" in result.stderr


@pytest.mark.parametrize(
    ("name", "expected"),
    [("c" * 300 + ".toml", "File name too long"), ("loop.toml", "Too many levels of symbolic links")],
)
def test_config_path_in_the_environment_that_cannot_be_looked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, expected: str
) -> None:
    if name == "loop.toml":
        (tmp_path / "loop.toml").symlink_to(tmp_path / "loop2.toml")
        (tmp_path / "loop2.toml").symlink_to(tmp_path / "loop.toml")
    monkeypatch.setenv("TRAINING_CHECK_CONFIG", str(tmp_path / name))
    with pytest.raises(ConfigError, match=rf"^TRAINING_CHECK_CONFIG.*: {expected}; point it at an existing"):
        load_config(cwd=tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        "[" + ".".join(["x"] * 20_000) + "]\n",
        "[[" + ".".join(["x"] * 40) + "]]\n",
        ".".join(["x"] * 20_000) + " = 1\n",
        '[runs.a]\nrun = "x.log"\n' + ".".join(["judge"] * 3_000) + " = 1\n",
    ],
    ids=["table header 20,000 parts", "array-of-tables header 40 parts", "dotted key 20,000 parts", "judge.judge…"],
)
def test_dotted_keys_past_the_nesting_limit_name_the_line(tmp_path: Path, text: str) -> None:
    line = text.count("\n", 0, text.rindex("\n"))  # the last line holds the long key
    with pytest.raises(ConfigError, match=rf"^training-check\.toml:{line + 1}: nesting too deep at line {line + 1} "):
        load_config(config(tmp_path, text), cwd=tmp_path)


def test_dots_in_quoted_keys_and_float_arrays_are_not_nesting(tmp_path: Path) -> None:
    quoted = ".".join("abcdefghijklmnopqrstuvwxyzabcdefghij")
    floats = ", ".join(["1.5"] * 100)
    text = f'[runs."{quoted}"]\nrun = "x.log"\njudge = {{ spike_z = 7.5 }}\nbaselines = {{ "a.b.c" = 0.5 }}\n'
    loaded = load_config(config(tmp_path, f"[defaults]\nnotes = 'n.md'\n{text}# {floats}\n"), cwd=tmp_path)
    assert loaded.runs[quoted].judge == {"spike_z": 7.5}


def test_a_table_where_a_threshold_goes_is_named_not_repr_recursed(tmp_path: Path) -> None:
    nested = "{ a = " * 30 + "1" + " }" * 30
    path = config(tmp_path, f'[runs.a]\nrun = "x.log"\n[runs.a.judge]\nspike_z = {nested}\n')
    with pytest.raises(ConfigError, match=r"training-check\.toml:4: runs\.a\.judge\.spike_z: .*got a table"):
        load_config(path, cwd=tmp_path)


def test_a_ten_megabyte_value_is_answered(tmp_path: Path) -> None:
    """One 10 MB string: the nesting scan and the key-line map skip it in C (regex), not character by character."""
    path = config(tmp_path, 'unknown = "' + "x" * 10_000_000 + '"\n')
    with pytest.raises(ConfigError, match=r"^training-check\.toml:1: unknown: unknown key"):
        load_config(path, cwd=tmp_path)
