"""Line grammars of text training logs: what numbers one line holds, in each format the parser knows.

Pure functions of one line of text, no state: JSON objects (``{"loss": 2.3}``, also after a prefix),
Hugging Face Trainer dicts printed with Python repr (``{'loss': 2.3, 'epoch': 0.1}``), printed
``key value`` / ``key: value`` / ``key=value`` lines (Megatron's ``|``-separated segments, tqdm bars
skipped), and CSV/TSV rows and headers. ``logparse.LogParser`` decides which grammar a line gets and which
step it lands on.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..models import MetricRole
from ..roles import EVAL_SPLIT_TOKENS, TRAIN_SPLIT_TOKENS, infer_role, tokenize
from .base import STEP_RANGE

__all__ = [
    "EXPLICIT_STEP_KEYS",
    "HF_TRAIN_KEYS",
    "IGNORED_KEYS",
    "STEP_KEYS",
    "BarRefresh",
    "csv_header",
    "flatten",
    "hf_dict",
    "json_dict",
    "parse_float",
    "pop_step",
    "prefix_counts",
    "progress_bar",
    "record_split",
    "split_row",
    "step_total",
    "text_metrics",
    "under_split",
]

STEP_KEYS = ("step", "_step", "global_step", "iteration", "iter", "num_updates")  # fairseq: num_updates
EXPLICIT_STEP_KEYS = frozenset(STEP_KEYS) - {"iter"}  # "iter" beside "epoch" may count within the epoch
# A dict record's field that names the split it reports on (MMDetection's {"mode": "val", ...}).
SPLIT_FIELDS = ("mode", "split", "phase")
# Keys that may be written as "N/TOTAL" (a progress count is a metric for no other key).
COUNT_KEYS = frozenset({*STEP_KEYS, "epoch"})
# Numbers that are not metrics even when a key precedes them.
IGNORED_KEYS = frozenset(
    {"eta", "date", "datetime", "timestamp", "_timestamp", "rank", "local_rank", "pid", "v_num", "seed"}
)  # v_num: Lightning's version; seed: MMDetection's log.json opens with its env_info, config and seed
# "s:250 tel:6.1": llm.c's main.log writes its step as "s", always with a colon (only then is it a step).
TEXT_STEP_ABBREVIATIONS = frozenset({"s"})
SOURCE_FILE_SUFFIXES = (".py", ".cc", ".cpp", ".cu", ".h")  # "[logging.py:96:log_dist]" is not a metric
HF_TRAIN_KEYS = frozenset({"loss", "grad_norm", "learning_rate"})
HF_MARKER_KEYS = HF_TRAIN_KEYS | {"epoch"}
HF_MARKER_PREFIXES = ("eval_", "test_", "train_")
MAX_DICT_CHARS = 65536  # longest printed dict handed to ast.literal_eval

_NUMBER = r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|(?i:infinity|inf|nan))"
# One "|"-separated segment that is nothing but "multi word key[:=] number" (Megatron's "lm loss: 2.3E+00").
_SEGMENT = re.compile(
    rf"\s*(?P<key>[A-Za-z_][\w./()-]*(?:\s+[A-Za-z_(][\w./()-]*)*?)(?P<sep>\s*[:=]\s*|\s+)"
    rf"(?P<num>{_NUMBER})(?P<total>\s*/\s*\d+)?\s*"
)
_KEY = re.compile(r"[A-Za-z_](?:[\w./@-]*\w)?")  # timm's Acc@1
_KEY_OPENERS = "[(|"  # "[step 200]" → "step"
_VALUE_CLOSERS = ",;)]}|"  # "2.31," "200]" → the number
_NUMBER_START = frozenset("0123456789+-.nNiI")
_VALUE_START = _NUMBER_START | {"["}
_PROGRESS_BAR = re.compile(r"\d{1,3}%\|[^|]*\|[^\[\n]*(?:\[[^\]]*\])?")
# A tqdm bar with a postfix: "Epoch 3:  45%|████▌     | 450/1000 [00:45<00:55, 10.0it/s, v_num=0, loss=2.31]",
# or, with no known total, "Epoch 3: 450it [00:45, 10.0it/s, loss=2.31]". The bracket holds the elapsed time,
# the rate and then the postfix.
# With unit_scale=True the counts are scaled as tqdm's format_sizeof writes them: "5.00/3.00k", "1.50k/3.00k".
_TQDM_COUNT = r"\d+(?:\.\d+)?[kMGTPEZY]?"
_TQDM_BAR = re.compile(
    rf"(?P<desc>[^|\[]*?)\s*(?:\d{{1,3}}%\|[^|]*\|\s*(?P<n>{_TQDM_COUNT})/{_TQDM_COUNT}|(?P<count>{_TQDM_COUNT})it)\s*"
    r"\[[^,\]]*,[^,\]]*,(?P<postfix>[^\]]*)\]"
)
_NUMBER_STRING = re.compile(_NUMBER)
_SCALE_PREFIXES = "kMGTPEZY"
_DIGITS = re.compile(r"\d+")
_PADDED_NONFINITE = re.compile(r"^([-+]?(?:nan|inf))\.0*$", re.IGNORECASE)  # Lightning pads NaN to "nan.0"
_BARE_NONFINITE = re.compile(r"(:\s*)(-?)(infinity|inf|nan)\b", re.IGNORECASE)
_NAN_SENTINEL = "'__nan__'"
_HEADER_FIELD = re.compile(r"[A-Za-z_][\w./@()-]*")
# YOLOv5's results.csv names a column "metrics/mAP_0.5:0.95": a colon inside a name, in a header of plain names
# (every field with a colon would be "loss:0.5,acc:0.3", a line of values); a file not named .csv went unread
_HEADER_FIELD_COLON = re.compile(r"[A-Za-z_][\w./@()-]*(?::[\w./@()-]+)+")
_KEY_CLEAN = re.compile(r"[()\[\]]")
_SPACES = re.compile(r"\s+")


def parse_float(text: str) -> float:
    """``float(text)``, but a finite-looking literal too large for a float (``1e999``, 400 digits) raises
    OverflowError instead of becoming Inf: a number out of range is a broken line, not a diverged loss."""
    value = float(text)
    if math.isinf(value) and "inf" not in text.lower():
        raise OverflowError(f"{text[:40]!r} is beyond the range of a float")
    return value


def _number(value: Any) -> float | None:
    """A metric value: ints and floats (NaN/Inf kept), never bools or strings."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _numeric_string(value: str) -> float | None:
    """A number written as a JSON string, as fairseq's JSON log writes every value (``"loss": "9.876"``)."""
    text = value.strip()
    if not text or text[0] not in _NUMBER_START or not _NUMBER_STRING.fullmatch(text):
        return None
    return parse_float(text)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested dict, keys joined with "/" (``{"train": {"loss": 1}}`` → ``train/loss``);
    a string that is one number counts as that number."""
    out: dict[str, float] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}/"))
        elif (number := _numeric_string(value) if isinstance(value, str) else _number(value)) is not None:
            out[name] = number
    return out


def _braced(text: str, opener: str) -> str | None:
    """The text from the first ``opener`` to the last "}" (what follows a tqdm bar or a prefix)."""
    start = text.find(opener)
    end = text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None


_JSON_DECODER = json.JSONDecoder(parse_float=parse_float)  # accepts NaN, Infinity, -Infinity
"""One decoder for every line: ``json.loads(body, parse_float=...)`` builds a new one per call, which cost
half of the decoding (0.73 of 1.55 s per 200,000 JSONL lines measured)."""


def json_dict(text: str) -> dict[str, Any] | None:
    body = _braced(text, '{"')
    if body is None:
        return None
    try:
        data = _JSON_DECODER.decode(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _nonfinite_literal(match: re.Match[str]) -> str:
    colon, sign, word = match.groups()
    return colon + (_NAN_SENTINEL if word.lower() == "nan" else f"{sign}1e999")


def hf_dict(text: str) -> dict[str, float] | None:
    """A Trainer log dict printed with Python repr; bare ``nan``/``inf`` allowed, only numbers kept."""
    body = _braced(text, "{'")
    if body is None or len(body) > MAX_DICT_CHARS:
        return None
    try:
        data = ast.literal_eval(_BARE_NONFINITE.sub(_nonfinite_literal, body))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(data, dict) or not data:
        return None
    out: dict[str, float] = {}
    for key, value in data.items():
        number = math.nan if value == _NAN_SENTINEL.strip("'") else _number(value)
        if not isinstance(key, str) or number is None:
            return None  # a config dump or some other dict, not a Trainer log line
        out[key] = number
    if not any(k in HF_MARKER_KEYS or k.startswith(HF_MARKER_PREFIXES) or _has_role(k) for k in out):
        return None
    return out


def record_split(data: Mapping[str, Any]) -> str:
    """The eval split a dict record names in a `SPLIT_FIELDS` field (``"mode": "val"``), or ""."""
    for field in SPLIT_FIELDS:
        value = data.get(field)
        if isinstance(value, str) and value.lower() in EVAL_SPLIT_TOKENS:
            return value
    return ""


def under_split(metrics: Mapping[str, float], split: str) -> dict[str, float]:
    """An eval record's metrics named under its split (``val/loss``): its ``loss`` is not the train loss.
    Counts keep their names; the learning rate it repeats from training is dropped."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if key.lower() in COUNT_KEYS or _SPLIT_WORDS.intersection(tokenize(key)):
            out[key] = value
        elif infer_role(key).role is not MetricRole.LEARNING_RATE:
            out[f"{split}/{key}"] = value
    return out


def _has_role(key: str) -> bool:
    """A metric the judge knows (``train/loss``, ``validation/accuracy``): a dict holding one is a metrics dict."""
    return infer_role(key).role is not MetricRole.OTHER


def prefix_counts(text: str, opener: str) -> dict[str, float]:
    """The step and epoch a line prints before its dict: ``Step: 100, {...}``, ``step 100: {...}``,
    ``Epoch 3 {...}``, absl's ``... Time since start: 100.0s, \tStep: 100, \t{...}``."""
    start = text.find(opener)
    if start <= 0:
        return {}
    return {key.lower(): value for key, value, _ in _lex_pairs(text[:start]) if key.lower() in COUNT_KEYS}


@lru_cache(maxsize=4096)
def _is_key(token: str) -> bool:
    return _KEY.fullmatch(token) is not None


def _value(raw: str, key: str) -> float | None:
    """The number a token holds ("2.31," "[0.0001]" "100:" "nan"), or None; "N/TOTAL" only for counts."""
    text = raw.rstrip(_VALUE_CLOSERS).removeprefix("[")
    if text.endswith(":") and not text.endswith("::"):
        text = text[:-1]  # "Step 100: loss=..."
    if "/" in text:
        head, _, tail = text.partition("/")
        if key.lower() not in COUNT_KEYS or not (tail.isdigit() or not tail):
            return None
        text = head
    if not text or text[0] not in _NUMBER_START or "_" in text:
        return None
    try:
        return parse_float(text)  # accepts nan, inf, -inf, Infinity, 1e-4; rejects 12:30, 2024-01-05, 5s, 95%
    except ValueError:
        return None


Pair = tuple[str, float, bool]  # key, value, written with ":" or "=" (rather than a space)


def _split_token(token: str) -> tuple[str, str | None]:
    """ "loss=2.31" → ("loss", "2.31"); "loss:" → ("loss", ""); "loss" → ("loss", None)."""
    if "=" in token:
        key, _, rest = token.partition("=")
        return key.rpartition(":")[2], rest  # "INFO:root:step=100" (logging's default format)
    if ":" in token:
        key, _, rest = token.partition(":")
        return key, rest
    return token, None


def _lex_pairs(text: str) -> list[Pair]:
    """``key value``, ``key: value``, ``key=value`` pairs of whitespace-separated tokens.

    A value must be the whole token (up to closing punctuation), so timestamps, dates, ETAs, units and
    progress counts are not taken; a token that is not a value is left to start the next pair. A split
    word just before a key belongs to it: nanoGPT's "train loss 2.1, val loss 2.3" is ``train_loss`` and
    ``val_loss``, not ``loss`` twice; a bracketed one names the keys after it (ESPnet's epoch summary
    "[train] loss=110.0, ... [valid] loss=90.1"): ``valid/loss``. A parenthesised ``(name:N)`` is where a
    logging call sits (ESPnet's "(trainer:672)"), not a metric. This is the hot loop on big logs, hence the
    cheap first-character tests before any parsing.
    """
    tokens = text.split()
    pairs: list[Pair] = []
    i, n = 0, len(tokens)
    split_word = ""  # the previous token, when it is a bare split word ("train", "val")
    section = ""  # the latest "[split]" token's split
    while i < n:
        token = tokens[i]
        i += 1
        if token[0] in _KEY_OPENERS:
            if _CLOSED.get(token[0]) == token[-1]:
                section = _section(token, section)
                if section or token[0] == "(":
                    continue
            token = token.lstrip(_KEY_OPENERS)
        if not token or not (token[0].isalpha() or token[0] == "_"):
            split_word = ""
            continue
        key, rest = _split_token(token)
        before, split_word = split_word, token if rest is None and token.lower() in _SPLIT_WORDS else ""
        explicit, from_next = rest is not None, not rest
        if not rest:
            if i < n and tokens[i] in ("=", ":"):
                i, explicit = i + 1, True
            if i >= n:
                continue
            rest = tokens[i]
        if rest[0] not in _VALUE_START or not _is_key(key):
            continue
        value = _value(rest, key)
        if value is not None:
            key = _with_split(before, key)
            pairs.append((f"{section}/{key}" if section else key, value, explicit))
            i += from_next  # the value token is used up; otherwise it may start the next pair
            split_word = ""
    return pairs


_SPLIT_WORDS = EVAL_SPLIT_TOKENS | TRAIN_SPLIT_TOKENS
_CLOSED = {"[": "]", "(": ")"}


def _section(token: str, section: str) -> str:
    """The split a bracketed token opens ("[valid]" → "valid"), "" for another bracketed word ("[att_plot]"),
    or the current one for a bracketed number ("[0]", "[ 100/1251"): only a word changes the section."""
    inner = token[1:-1]
    if inner.lower() in _SPLIT_WORDS:
        return inner
    return "" if inner[:1].isalpha() and ":" not in inner else section


def _with_split(split_word: str, key: str) -> str:
    """``val`` + ``loss`` → ``val_loss``; a step key or a key that names its split keeps its name."""
    if not split_word or key.lower() in COUNT_KEYS or _SPLIT_WORDS.intersection(tokenize(key)):
        return key
    return f"{split_word}_{key}"


def _segment_pairs(segment: str) -> list[Pair]:
    whole = _SEGMENT.fullmatch(segment)
    if whole is None:
        return _lex_pairs(segment)
    key = _SPACES.sub("_", _KEY_CLEAN.sub("", whole["key"]).strip())
    if whole["total"] and key.lower() not in COUNT_KEYS:
        return []
    return [(key, parse_float(whole["num"]), whole["sep"].strip() != "")]


@dataclass(frozen=True)
class BarRefresh:
    """One refresh of a tqdm bar that shows metrics in its postfix."""

    label: str  # its description without numbers: the same bar across epochs ("Epoch 3:" → "Epoch")
    n: int  # its count: batches of this epoch, or steps
    metrics: dict[str, float]


def progress_bar(text: str) -> BarRefresh | None:
    """A tqdm bar's count and the ``key=value`` numbers of its postfix, or None when ``text`` is not such a bar
    (PyTorch Lightning's default console output, diffusers' and accelerate's ``set_postfix`` loops). A bar
    shows the latest values at every refresh, so which of them are new points is the parser's call."""
    if not text.endswith("]") or ("%|" not in text and "it [" not in text):
        return None
    bar = _TQDM_BAR.fullmatch(text)
    if bar is None:
        return None
    metrics: dict[str, float] = {}
    for item in bar["postfix"].split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not _is_key(key) or key.lower() in IGNORED_KEYS:
            continue
        try:
            metrics[key] = parse_float(_PADDED_NONFINITE.sub(r"\1", raw.strip()))
        except ValueError:
            continue  # a string in the postfix (set_postfix_str, a phase name)
    label = _DIGITS.sub("", bar["desc"]).strip(" :")
    return BarRefresh(label, _bar_count(bar["n"] or bar["count"]), metrics) if metrics else None


def _bar_count(text: str) -> int:
    """A bar's count: "450", or scaled ("1.50k" is 1,500, to the 3 significant digits the bar shows)."""
    if text[-1] in _SCALE_PREFIXES:
        return round(float(text[:-1]) * 1000 ** (_SCALE_PREFIXES.index(text[-1]) + 1))
    return round(float(text)) if "." in text else int(text)


def _line_pairs(text: str) -> list[Pair]:
    if "%|" in text and (bar := _PROGRESS_BAR.search(text)):
        text = text[bar.end() :]  # a tqdm bar, its description and its postfix are not metrics
    if "|" not in text:
        return _lex_pairs(text)
    return [pair for segment in text.split("|") for pair in _segment_pairs(segment)]


def text_metrics(text: str) -> tuple[dict[str, float], int | None] | None:
    """``key value`` pairs of a printed line and its step, or None when the line is not a metric line.

    A line counts when one pair is written ``key: v`` / ``key=v``, names a step, or names a known role:
    "Loaded 5 files" holds a pair but no metric.
    """
    metrics: dict[str, float] = {}
    step: int | None = None
    counts = False
    split = _eval_line_split(text)
    for key, value, explicit in _line_pairs(text):
        low = key.lower()
        if low in IGNORED_KEYS or low.endswith(SOURCE_FILE_SUFFIXES):
            continue
        if low in STEP_KEYS or _AT_STEP.search(low) or (explicit and low in TEXT_STEP_ABBREVIATIONS):
            if step is None and math.isfinite(value) and value == int(value):
                step = int(value)
            counts = True
            continue
        if split and low not in COUNT_KEYS and not _SPLIT_WORDS.intersection(tokenize(key)):
            key = f"{split}/{key}"
        metrics[key] = value
        counts = counts or explicit or infer_role(key).role is not MetricRole.OTHER
    if step is None and len(metrics) == 1 and next(iter(metrics)).lower() == "epoch":
        return None  # torchvision's "Epoch: [0] Total time: 1:00:00": a count alone is no metric line
    return (metrics, step) if counts and metrics else None


_EVAL_LINE_START = re.compile(r"^[\s|]*(test|val|valid|validation|eval|evaluation|dev)\b", re.IGNORECASE)
_EVAL_EPOCH = re.compile(r"\bEpoch\((val|test)\)")  # mmengine's "Epoch(val) [1][625/625]  coco/bbox_mAP: ..."
# The validation summary of PyTorch's ImageNet examples: " * Acc@1 76.1 Acc@5 92.9" (" * Prec@1" before 2018)
_SUMMARY_LINE = re.compile(r"\*\s+(?:Acc|Prec)@")
SUMMARY_SPLIT = "eval"
_FAIRSEQ_SUBSET = re.compile(r"\bvalid on '([^']+)' subset")
_AT_STEP = re.compile(r"(?:^|_)at_(?:iteration|iter|step)$")


def _eval_line_split(text: str) -> str:
    """The split an eval line reports on, or "": a line that starts with its split word (timm's "Test:",
    Megatron's "validation loss at iteration N |"), fairseq's "valid on 'valid' subset", mmengine's
    "Epoch(val)", or " * " (the validation summary of PyTorch's ImageNet examples). Its metrics are named
    under it (``Test/Loss``): the same word on a train line is another metric."""
    if (subset := _FAIRSEQ_SUBSET.search(text)) is not None:
        name = subset[1]
        return name if _SPLIT_WORDS.intersection(tokenize(name)) else "valid"
    start = _EVAL_LINE_START.match(text)
    if start is not None:
        return start[1]
    if "Epoch(" in text and (mode := _EVAL_EPOCH.search(text)) is not None:
        return mode[1]
    return SUMMARY_SPLIT if text.startswith("*") and _SUMMARY_LINE.match(text) else ""


_STEP_OF_TOTAL = re.compile(r"\b(?:step|iteration|iter|global_step)\s*[:=]?\s*\d+\s*/\s*(\d+)", re.IGNORECASE)


def step_total(text: str) -> int | None:
    """The total a metric line counts its steps against: Megatron's "iteration 100/ 143000",
    modded-nanogpt's "step:125/3000", "Step 40/500". The run has finished once its step reaches it."""
    found = _STEP_OF_TOTAL.search(text) if "/" in text else None
    total = int(found[1]) if found is not None else 0
    return total if 0 < total <= STEP_RANGE[1] else None


def pop_step(metrics: dict[str, float]) -> int | None:
    """Remove and return the first step key present (``step``, ``_step``, ... in that order)."""
    key = next((key for key in STEP_KEYS if key in metrics), None) or _split_step_key(metrics)
    if key is None:
        return None
    value = metrics.pop(key)
    return int(value) if math.isfinite(value) and value == int(value) else None


def _split_step_key(metrics: Mapping[str, float]) -> str | None:
    """A step key under a split word, for a record that has no plain one: fairseq's per-epoch JSON records
    prefix every key with their subset (``"valid_num_updates"``, ``"train_num_updates"``)."""
    for key in metrics:
        split, _, name = key.partition("_")
        if name in STEP_KEYS and split in _SPLIT_WORDS:
            return key
    return None


def split_row(text: str, delim: str) -> list[str]:
    if '"' in text:
        return next(csv.reader([text], delimiter=delim))
    return text.split(delim)


def csv_header(text: str, delim: str | None, forced: bool) -> list[str] | None:
    """A header row: at least two fields, all names (any first row when the format was given)."""
    if delim is None:
        return None
    fields = [f.strip() for f in split_row(text, delim)]
    if forced or (len(fields) >= 2 and all(_HEADER_FIELD.fullmatch(f) for f in fields)):
        return fields
    plain = sum(1 for f in fields if _HEADER_FIELD.fullmatch(f))
    if plain > len(fields) / 2 and all(_HEADER_FIELD.fullmatch(f) or _HEADER_FIELD_COLON.fullmatch(f) for f in fields):
        return fields
    return None
