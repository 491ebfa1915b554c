"""`training-check`: the same operations as the MCP tools, for a person at a terminal.

    training-check check SOURCE [--json] [--baseline KEY=VALUE] [--role KEY=ROLE]   (a sweep/project: every run)
    training-check read|judge|schedule SOURCE
    training-check review SOURCE [--json] [--no-image]   (the reviewer on the latest unsure verdict)
    training-check record-review [SOURCE] ANSWER [--reviewer NAME]  (the agent backend's reply; - reads stdin)
    training-check plot SOURCE [-o run.png]        (loss, eval, LR, grad norm; the judge's flagged steps)
    training-check stop SOURCE --confirm --reason "..."
    training-check watch SOURCE [--stop]             (the skill's loop in a terminal: one line per check)
    training-check forget SOURCE --yes               (delete its stored state, keep its incidents)
    training-check serve [--http PORT] [--host 127.0.0.1] [--token T]
    training-check demo
    training-check init NAME RUN [--stop pid_file=train.pid] [--log-fallback LOG] [--total-steps N]

Errors become one line on stderr and exit code 2 (so does `forget` without --yes); nothing else is caught here.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pydantic import BaseModel

from .. import __version__
from ..errors import ConfigError, TrainingCheckError
from ..models import RunKind
from ..roles import OVERRIDE_ROLES, parse_baselines, parse_role_overrides
from .render import render

if TYPE_CHECKING:  # the service imports wandb; `serve --help` and `demo` should not wait for it
    from ..service import Monitor
    from ..sources import Progress
    from ..state import RunFootprint

EXIT_ERROR = 2
STDIO_ON_A_TERMINAL = (
    "training-check serve: an MCP server on stdin/stdout, waiting for an MCP client to start it (e.g. `claude mcp "
    "add training-check -- training-check serve`); `serve --http PORT` serves over HTTP. Ctrl-D quits."
)
"""Said when stdin is a terminal: the SDK reads stdin in a thread, so Ctrl-C waits for a line, Ctrl-D ends it."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="training-check", description="Watch the quality of ML training runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    for name, text in [
        ("check", "read new metrics, judge them, schedule the next check"),
        ("read", "read new metrics and show the snapshot"),
        ("judge", "judge the stored metrics"),
    ]:
        sub = commands.add_parser(name, help=text, description=text)
        _add_run_args(sub)

    text = "when to check next (CronCreate arguments)"
    sched = commands.add_parser("schedule", help=text, description=text)
    _add_optional_run(sched)
    sched.add_argument(
        "--review", type=str.upper, choices=["STOP", "CONTINUE", "WAIT"], help="the reviewer's answer, if any"
    )  # any case, as the schedule_next tool takes it
    sched.add_argument("--json", action="store_true", help="print one JSON object")

    text = "ask the reviewer about the latest unsure verdict"
    review = commands.add_parser("review", help=text, description=text)
    _add_optional_run(review)
    review.add_argument("--json", action="store_true", help="print one JSON object")
    review.add_argument("--no-image", action="store_true", help="send the numbers without the run's chart")
    _add_review_commands(commands)

    text = "stop the training run as its [runs.NAME.stop] table in training-check.toml says, and record the evidence"
    stop = commands.add_parser("stop", help=text, description=text)
    stop.add_argument("source", metavar="run", help="the run")
    stop.add_argument("--confirm", action="store_true", help="required: this kills the training process")
    stop.add_argument("--reason", required=True, help="one sentence for the incident record")
    stop.add_argument("--json", action="store_true", help="print one JSON object")

    _add_watch_parser(commands)
    _add_init_parser(commands)

    text = "delete a run's stored state (read position, history, checks, reviews, cron) so the next check starts fresh"
    forget = commands.add_parser("forget", help=text, description=f"{text}; its incidents are kept.")
    forget.add_argument("source", metavar="run", help="the run, as `check` was given it (alias, path or URL)")
    forget.add_argument("--yes", action="store_true", help="required: without it, only show what would be deleted")

    text = "run the MCP server (stdio unless --http)"
    serve = commands.add_parser("serve", help=text, description=text)
    serve.add_argument("--http", type=_port, metavar="PORT", help="serve streamable HTTP on PORT instead of stdio")
    serve.add_argument("--host", default=None, help="HTTP address (default 127.0.0.1)")
    serve.add_argument("--token", default=None, help="bearer token (default: $TRAINING_CHECK_HTTP_TOKEN)")

    text = "train a small model, break it, and watch the check stop it"
    demo = commands.add_parser("demo", help=text, description=text)
    demo.add_argument("--seconds-per-minute", type=float, default=0.4, help="compressed clock (default 0.4)")
    demo.add_argument("--workdir", default=None, help="where the demo writes (default: a temporary dir)")
    return parser


def _port(text: str) -> int:
    """A TCP port to listen on: argparse says "argument --http: ..." with this message."""
    if not text.strip().isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number from 0 to 65535 (e.g. --http 8765)")
    return int(text)


def _add_review_commands(commands: argparse._SubParsersAction) -> None:
    text = "store a reviewer's reply to the prompt `review` printed (agent backend)"
    record = commands.add_parser("record-review", help=text, description=text)
    record.add_argument(
        "source", metavar="run", nargs="?", default=None, help="the run; left out: the project's only run"
    )  # with one word given argparse fills this one: `_answer_alone` moves it to `answer`
    record.add_argument(
        "answer", nargs="?", default=None, help="the reply, starting with STOP, CONTINUE or WAIT; - reads it from stdin"
    )
    record.add_argument("--reviewer", default=None, help="who answered (a model name, 'subagent', a person)")
    record.add_argument("--json", action="store_true", help="print one JSON object")

    text = "draw loss, eval, LR and grad norm with the judge's flagged steps"
    plot = commands.add_parser("plot", help=text, description=text)
    _add_optional_run(plot)
    plot.add_argument(
        "-o", "--output", default=None, help="the .png file to write, or a directory for it (default: the state dir)"
    )
    plot.add_argument("--json", action="store_true", help="print one JSON object")
    _add_role_arg(plot)


def _add_watch_parser(commands: argparse._SubParsersAction) -> None:
    text = "check the run at the intervals the schedule gives, one line per check, until monitoring is over"
    watch = commands.add_parser("watch", help=text, description=f"{text}. Ctrl-C quits (exit 130).")
    _add_optional_run(watch)
    watch.add_argument("--stop", action="store_true", help="stop the run on STOP as training-check.toml allows")
    watch.add_argument(
        "--seconds-per-minute", type=float, default=60.0, metavar="S",
        help="compress time: sleep S seconds per schedule minute (default 60; for tests and demos)",
    )  # fmt: skip


def _add_init_parser(commands: argparse._SubParsersAction) -> None:
    text = "add a run to training-check.toml (created if there is none): its name, where it logs, how to stop it"
    init = commands.add_parser("init", help=text, description=f"{text}. The file is checked before it is written.")
    init.add_argument("name", help="the alias the tools and the skill will take (e.g. bert)")
    init.add_argument("run", help="the run: a log path, a W&B run dir or entity/project/id, ssh://host/path")
    init.add_argument(
        "--stop", metavar="HOW",
        help="how stop may end it: pid_file=train.pid, pid=12345, tmux=SESSION, screen=SESSION, slurm=JOB_ID, "
        "wandb (on an ssh:// run: on that host); left out, the run can be checked but not stopped",
    )  # fmt: skip
    init.add_argument("--log-fallback", metavar="LOG", help="the training log, read when W&B cannot be reached")
    init.add_argument("--total-steps", type=int, metavar="N", help="the run's planned steps (a plain log lacks them)")
    init.add_argument(
        "--baseline", action="append", default=[], metavar="KEY=VALUE",
        help="what comparable runs reach on an eval, e.g. eval/acc=0.71 (repeatable)",
    )  # fmt: skip
    _add_role_arg(init)
    init.add_argument("--config", type=Path, metavar="FILE", help="the file to add it to (default: the project's)")


def _add_optional_run(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "source", metavar="run", nargs="?", default=None,
        help="the run (path, URL, entity/project/id, ssh://host/path or alias); left out: the project's only run",
    )  # fmt: skip


def _add_run_args(sub: argparse.ArgumentParser) -> None:
    _add_optional_run(sub)
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    sub.add_argument(
        "--baseline", action="append", default=[], metavar="KEY=VALUE",
        help="what comparable runs reach on an eval, e.g. eval/acc=0.71 (repeatable)",
    )  # fmt: skip
    _add_role_arg(sub)


def _add_role_arg(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--role", action="append", default=[], metavar="KEY=ROLE",
        help=f"a metric's role, e.g. val_score=eval_higher (repeatable); ROLE is one of {', '.join(OVERRIDE_ROLES)}",
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "record-review":
            _answer_alone(args)
        return _dispatch(args)
    except TrainingCheckError as exc:
        print(f"training-check: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: the reader left, nothing to report
        sys.stderr.close()
        return 0


def _answer_alone(args: argparse.Namespace) -> None:
    """``record-review -`` (or ``record-review "WAIT ..."``) records the reply for the project's only run, as
    ``review`` without a run reviews it; argparse put that one word in ``source``. Without any word: the
    reply is missing (it said "the following arguments are required: answer" to ``record-review -``)."""
    if args.answer is None and args.source is not None:
        args.source, args.answer = None, args.source
    if args.answer is None:
        raise ConfigError("record-review needs the reply: training-check record-review [RUN] ANSWER ('-' reads stdin)")


def _dispatch(args: argparse.Namespace) -> int:
    if getattr(args, "source", "") is None:
        from ..config import load_config

        args.source = load_config().only_run(args.command)
    if args.command == "serve":
        return _serve(args)
    if args.command == "watch":
        from ..watch import watch_command

        return watch_command(args.source, act_on_stop=args.stop, seconds_per_minute=args.seconds_per_minute)
    if args.command == "init":
        return _init(args)
    if args.command == "demo":
        from ..examples.demo import run_demo

        return run_demo(seconds_per_minute=args.seconds_per_minute, workdir=args.workdir)
    from ..service import Monitor

    monitor = Monitor()
    if args.command == "forget":
        try:
            return _forget(monitor, args.source, confirmed=args.yes)
        finally:
            monitor.close()
    bar = TerminalProgress(sys.stderr)
    try:
        result = _run_command(monitor, args, bar.progress() if sys.stderr.isatty() else None)
        missing_stop = _missing_stop(monitor, result)
    finally:
        bar.clear()
        monitor.close()
    _print(result, as_json=args.json, stop_note=missing_stop)
    return 0


def _missing_stop(monitor: Monitor, result: BaseModel) -> str | None:
    """What to configure before the printed `stop` command can work, for a STOP (a verdict's or a reviewer's) on
    a run without a stop table: the command was suggested as if it would stop the run, and only running it said
    that nothing was configured. None when the run has a stop table or nothing is to be stopped."""
    from ..models import CheckReport, ReviewResult

    if not isinstance(result, CheckReport | ReviewResult) or result.next_action != "stop_run":
        return None
    ctx = monitor.context(result.run, missing_path_ok=True)
    if ctx.settings.stop is not None:
        return None
    from ..stop import no_stop_configured

    return f"{no_stop_configured(ctx.ref)} Until then, stop the training by hand."


def _init(args: argparse.Namespace) -> int:
    from ..config import NewRun, add_run, parse_run
    from ..config.toml_lines import table_key

    new = NewRun(
        name=args.name, run=args.run, log_fallback=args.log_fallback, total_steps=args.total_steps,
        baselines=parse_baselines(args.baseline), roles=parse_role_overrides(args.role), stop=args.stop,
    )  # fmt: skip
    path, entry = add_run(new, config=args.config)
    print(f"added to {path}:\n\n{entry}")
    ref = parse_run(args.run, base_dir=path.parent, missing_path_ok=True)
    if ref.kind is not RunKind.SSH and ref.path is not None and not os.path.exists(ref.path):
        print(f"note: {ref.path} does not exist yet: checks will say so until the training writes it (a typo?)")
    print(f"check it now: training-check check {shlex.quote(args.name)} (in Claude Code: /training-check {args.name})")
    if args.stop is None:
        stop_table = f"[runs.{table_key(args.name)}.stop]"
        print(f"stop_run will refuse it until {stop_table} says how to stop it (--stop, or edit the file)")
    return 0


def _forget(monitor: Monitor, run: str, *, confirmed: bool) -> int:
    """Without ``confirmed`` only say what would be deleted, and exit 2 naming --yes."""
    key, stored = monitor.forget(run, dry_run=not confirmed)
    kept = "no incidents"
    if stored.incidents:
        kept = f"{_count(stored.incidents, 'incident')} kept (the evidence of past stops)"
    if not stored.forgettable:
        print(f"nothing to forget for {run} ({key}); {kept}")
        return 0
    if not confirmed:
        print(f"{run} ({key}): would delete {_footprint_words(stored)}; {kept}")
        print(
            f"training-check: nothing was deleted; run `training-check forget {shlex.quote(run)} --yes` to delete "
            "the above",
            file=sys.stderr,
        )
        return EXIT_ERROR
    print(f"forgot {run} ({key}): deleted {_footprint_words(stored)}; {kept}; the next check reads it from the start")
    return 0


def _footprint_words(stored: RunFootprint) -> str:
    parts = [
        "the read position" if stored.read_position else "",
        _count(stored.metrics, "metric history", "metric histories"),
        _count(stored.checks, "check"),
        _count(stored.reviews, "review"),
        "the cron job record" if stored.cron else "",
    ]
    return ", ".join(part for part in parts if part)


def _count(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


class TerminalProgress:
    """One line on stderr, rewritten in place, while a long read runs (the CLI shows it on a terminal only)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._width = 0

    def progress(self) -> Progress:
        from ..sources import ThrottledProgress

        return ThrottledProgress(self.show)

    def show(self, count: int, text: str) -> None:
        spinner = "|/-\\"[count % 4]
        line = f"training-check {spinner} {text}"
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def _run_command(monitor: Monitor, args: argparse.Namespace, progress: Progress | None = None) -> BaseModel:
    if args.command == "schedule":
        return monitor.schedule_next(args.source, review=args.review)
    if args.command == "review":
        return monitor.escalate_review(args.source, image=not args.no_image)
    if args.command == "record-review":
        answer = sys.stdin.read() if args.answer == "-" else args.answer
        return monitor.record_review(args.source, answer, reviewer=args.reviewer)
    if args.command == "plot":
        from ..plot import plot_output  # imported when a chart is asked for, as the service does

        return monitor.plot(args.source, output=plot_output(args.output), roles=parse_role_overrides(args.role))[0]
    if args.command == "stop":
        if not args.confirm:  # the service's refusal names the tool's confirm=true, not this flag
            raise ConfigError(
                f"stop kills the training process: add --confirm once the verdict is stop (or the reviewer said "
                f"STOP): training-check stop {shlex.quote(args.source)} --confirm --reason {shlex.quote(args.reason)}"
            )
        return monitor.stop_run(args.source, confirm=True, reason=args.reason)
    roles = parse_role_overrides(args.role)
    baselines = parse_baselines(args.baseline)
    group_kinds = (RunKind.WANDB_SWEEP, RunKind.WANDB_PROJECT)
    if args.command == "check" and monitor.context(args.source).ref.kind in group_kinds:
        return monitor.check_many(args.source, roles=roles, baselines=baselines, progress=progress)
    if args.command == "read":
        return monitor.read_metrics(args.source, roles=roles, baselines=baselines, progress=progress)
    if args.command == "judge":
        return monitor.judge(args.source, roles=roles, baselines=baselines, progress=progress)
    return monitor.check(args.source, roles=roles, baselines=baselines, progress=progress)


def _serve(args: argparse.Namespace) -> int:
    from ..server import build_server, serve_http

    if args.http is None:
        for option, value in (("--host", args.host), ("--token", args.token)):
            if value is not None:
                raise ConfigError(f"{option} applies to --http PORT only; without --http the server speaks stdio")
        if sys.stdin.isatty():  # a person, not an MCP client: it would wait in silence, deaf to Ctrl-C
            print(STDIO_ON_A_TERMINAL, file=sys.stderr, flush=True)
        build_server().run()
        return 0
    token = args.token or os.environ.get("TRAINING_CHECK_HTTP_TOKEN")
    serve_http(build_server(), host=args.host or "127.0.0.1", port=args.http, token=token)
    return 0


def _print(result: BaseModel, *, as_json: bool, stop_note: str | None = None) -> None:
    """``stop_note`` (`_missing_stop`) goes under the line that suggests the stop command."""
    if as_json:
        print(json.dumps(result.model_dump(mode="json", exclude_none=True)))
        return
    print(render(result, stop_note=stop_note))

if __name__ == "__main__":
    raise SystemExit(main())
