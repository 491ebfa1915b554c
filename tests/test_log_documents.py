"""Histories saved as one JSON document (a Keras History dict, a Hugging Face trainer_state.json, a list of
per-epoch records): read whole at each check, only the records not read before handed on.

Files are real files in tmp_path, written the way their libraries write them: ``json.dump(history.history,
f)`` for Keras (one line, NaN as ``NaN``), ``json.dumps(asdict(state), indent=2, sort_keys=True) + "\\n"``
for the Trainer.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mcp_training_check.sources.base import ReadBatch
from mcp_training_check.sources.logdoc import looks_like_document
from mcp_training_check.sources.logs import LogFileSource, log_config
from tests.test_log_formats import cli


def _keras(path: Path, epochs: int, *, nan_from: int | None = None) -> None:
    loss = [2.0 * math.exp(-e / 8) + 0.1 for e in range(epochs)]
    if nan_from is not None:
        loss = [math.nan if e >= nan_from else v for e, v in enumerate(loss)]
    history = {
        "loss": loss,
        "accuracy": [0.5 + 0.4 * (1 - math.exp(-e / 6)) for e in range(epochs)],
        "val_loss": [2.1 * math.exp(-e / 9) + 0.2 for e in range(epochs)],
        "val_accuracy": [0.5 + 0.35 * (1 - math.exp(-e / 6)) for e in range(epochs)],
    }
    with path.open("w") as fh:
        json.dump(history, fh)


def _trainer_state(path: Path, last_step: int, *, max_steps: int = 1000) -> None:
    history: list[dict[str, float]] = []
    for step in range(10, last_step + 1, 10):
        history.append({"epoch": step / 500, "grad_norm": 1.5, "learning_rate": 5e-5, "loss": 3.0 / step**0.3,
                        "step": step})  # fmt: skip
        if step % 100 == 0:
            history.append({"epoch": step / 500, "eval_loss": 2.5 / step**0.25, "eval_runtime": 4.2, "step": step})
    state = {"best_metric": None, "epoch": last_step / 500, "global_step": last_step, "log_history": history,
             "logging_steps": 10, "max_steps": max_steps, "num_train_epochs": 2, "total_flos": 1.0e15}  # fmt: skip
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


def _steps(batch: ReadBatch, name: str) -> list[int]:
    return batch.series[name].steps.tolist() if name in batch.series else []


def test_a_keras_history_is_read_and_each_check_takes_only_the_new_epochs(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    source = LogFileSource(path)
    _keras(path, 12)
    first = source.read(None)
    assert _steps(first, "loss") == list(range(1, 13)) and _steps(first, "val_accuracy") == list(range(1, 13))
    assert any("Keras History" in n and "(12 of its 12)" in n for n in first.notes), first.notes
    same = source.read(first.cursor)
    assert same.new_points == 0 and not same.restarted
    _keras(path, 20)  # the callback rewrote it after 8 more epochs
    grown = source.read(same.cursor)
    assert _steps(grown, "loss") == list(range(13, 21)) and not grown.restarted
    assert any("(8 of its 20)" in n for n in grown.notes), grown.notes


def test_a_keras_history_ending_in_nan_keeps_its_nans(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    _keras(path, 15, nan_from=11)
    assert "NaN" in path.read_text()  # json.dump's spelling
    values = LogFileSource(path).read(None).series["loss"].values
    assert [math.isnan(v) for v in values] == [False] * 11 + [True] * 4


def test_a_trainer_state_json_is_read_with_its_evals_and_its_total_steps(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    _trainer_state(path, 300)
    source = LogFileSource(path)
    batch = source.read(None)
    assert _steps(batch, "loss") == list(range(10, 301, 10))
    assert _steps(batch, "eval_loss") == [100, 200, 300]
    assert log_config(batch.cursor) == {"total_steps": 1000}
    _trainer_state(path, 500)
    later = source.read(batch.cursor)
    assert _steps(later, "loss") == list(range(310, 501, 10)) and _steps(later, "eval_loss") == [400, 500]


def test_a_list_of_epoch_records_takes_its_epoch_as_the_step(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    records = [{"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.2 / e, "val_acc": 0.5 + e / 100} for e in range(1, 21)]
    path.write_text(json.dumps(records, indent=4))
    batch = LogFileSource(path).read(None)
    assert _steps(batch, "train_loss") == list(range(1, 21))
    assert "epoch" not in batch.series


@pytest.mark.parametrize("change", ["fewer epochs", "another run"])
def test_a_shorter_or_different_history_is_read_again_from_its_start(tmp_path: Path, change: str) -> None:
    path = tmp_path / "history.json"
    source = LogFileSource(path)
    _keras(path, 20)
    first = source.read(None)
    if change == "fewer epochs":
        _keras(path, 5)  # a relaunch overwrote it
    else:
        path.write_text(json.dumps({"loss": [9.0] * 25, "val_loss": [9.5] * 25}))
    again = source.read(first.cursor)
    assert again.restarted and _steps(again, "loss") == list(range(1, 6 if change == "fewer epochs" else 26))


def test_a_history_caught_mid_rewrite_waits_for_the_next_check(tmp_path: Path) -> None:
    path = tmp_path / "trainer_state.json"
    source = LogFileSource(path)
    _trainer_state(path, 200)
    first = source.read(None)
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])  # the Trainer is halfway through writing it
    torn = source.read(first.cursor)
    assert torn.new_points == 0 and not torn.restarted and torn.cursor == first.cursor
    assert any("did not parse" in n and "next check" in n for n in torn.notes), torn.notes
    _trainer_state(path, 300)
    assert _steps(source.read(torn.cursor), "loss") == list(range(210, 301, 10))


@pytest.mark.parametrize(
    ("head", "document"),
    [
        (b'{"loss": [2.3, 2.1, 1.9], "val_loss": [2.4, 2.2, 2.0]}', True),
        (b'{\n  "best_metric": null,\n  "log_history": [\n', True),
        (b'[\n  {"epoch": 1, "loss": 0.5}\n', True),
        (b'{"loss": 2.3, "step": 1}\n{"loss": 2.1, "step": 2}\n', False),
        (b'{"lr": [0.1, 0.01], "loss": 2.3, "step": 1}\n{"lr": [0.1, 0.01], "loss": 2.1, "step": 2}\n', False),
        (b"step 1 loss 2.3\n", False),
        (b"epoch,loss\n1,2.3\n", False),
    ],
)
def test_what_starts_a_document_and_what_starts_a_jsonl_log(head: bytes, document: bool) -> None:
    assert looks_like_document(head) is document


def test_a_jsonl_log_whose_records_hold_lists_is_still_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"lr": [0.1], "loss": 2.0 / s, "step": s}) + "\n" for s in range(1, 31)))
    batch = LogFileSource(path).read(None)
    assert _steps(batch, "loss") == list(range(1, 31))
    assert not any("JSON document" in n for n in batch.notes)


def test_checking_a_keras_history_twice_judges_it_and_reads_only_new_epochs(tmp_path: Path) -> None:
    """What a user gets from `training-check check history.json` on a history a callback rewrites each epoch
    (before, nothing: "no metrics read yet", with no word of why)."""
    path = tmp_path / "history.json"
    home = tmp_path / "home"
    _keras(path, 25)
    first = json.loads(cli("check", str(path), "--json", home=home, cwd=tmp_path).stdout)
    assert first["verdict"]["decision"] == "continue", first["verdict"]["summary"]
    assert first["snapshot"]["last_step"] == 25
    _keras(path, 30, nan_from=27)
    second = json.loads(cli("check", str(path), "--json", home=home, cwd=tmp_path).stdout)
    assert second["verdict"]["decision"] == "stop" and "NaN" in second["verdict"]["summary"]
    assert any("(5 of its 30)" in w for w in second["snapshot"]["warnings"]), second["snapshot"]["warnings"]


@pytest.mark.parametrize(
    "content",
    [{"config": {"lr": 0.1}, "name": "run-1"}, [0.9, 0.8, 0.7], {"loss": [0.9, 0.8], "names": ["a", "b"]}],
    ids=["config", "bare list", "strings beside numbers"],
)
def test_a_json_document_of_another_shape_says_what_this_reader_knows(tmp_path: Path, content) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(content))
    batch = LogFileSource(path).read(None)
    assert batch.new_points == 0 and not batch.restarted
    assert any("not a training history this reader knows" in n and "trainer_state.json" in n for n in batch.notes)


def test_a_jsonl_log_of_one_record_so_far_is_read_as_a_line(tmp_path: Path) -> None:
    """Its first record holds a list (an LR per param group) and no second line has come yet: one JSON object,
    but a record (it holds numbers of its own), read as the JSONL line it is."""
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"lr": [0.1, 0.01], "loss": 2.5, "step": 1}) + "\n")
    source = LogFileSource(path)
    first = source.read(None)
    assert _steps(first, "loss") == [1]
    with path.open("a") as fh:
        fh.write(json.dumps({"lr": [0.1, 0.01], "loss": 2.1, "step": 2}) + "\n")
    assert _steps(source.read(first.cursor), "loss") == [2]


@pytest.mark.parametrize("damage", [{"parser": {"format": 7}}, {"parser": None}, {"parser": "x"}])
def test_a_document_cursor_with_an_unusable_parser_is_read_again_from_the_start(tmp_path: Path, damage) -> None:
    """A hand-edited state: the saved parser cannot be used, so the history is read whole again (a restart), not
    a crash."""
    path = tmp_path / "history.json"
    source = LogFileSource(path)
    _keras(path, 12)
    first = source.read(None)
    again = source.read({**first.cursor, **damage})
    assert again.restarted and _steps(again, "loss") == list(range(1, 13))
