"""The agent backend with no key at all, as the skill drives it through the MCP SDK's in-process client:
unsure check → escalate_review hands over the strict prompt → record_review stores the reply → schedule_next
and stop_run act on it. Plus the reply parser, and record-review from the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client

from mcp_training_check.errors import ReviewError
from mcp_training_check.models import CheckReport, ReviewResult, Schedule, StopResult
from mcp_training_check.review import answer_from_reply
from mcp_training_check.server import build_server
from tests.review_fixtures import BASELINE, RUN, unsure_project

STOP_ENTRY = '[runs.flat.stop]\npid_file = "train.pid"\ngrace_seconds = 5\n'


def skill_loop(server, steps):
    """Run ``steps`` — (tool, arguments) pairs, an argument value callable on the results so far — through one
    client session, as the skill would; returns every result's structured content (or the error text)."""

    async def go():
        results = []
        async with Client(server) as client:
            for tool, arguments in steps:
                args = {k: (v(results) if callable(v) else v) for k, v in arguments.items()}
                result = await client.call_tool(tool, args)
                text = " ".join(getattr(block, "text", "") for block in result.content)
                results.append(text if result.is_error else result.structured_content)
        return results

    return anyio.run(go)


def test_no_key_unsure_check_prompt_recorded_continue_and_the_interval_climbs(tmp_path):
    monitor = unsure_project(tmp_path)  # the first check ran; this loop is the next cron fire
    check, review, recorded, schedule = skill_loop(
        build_server(monitor),
        [
            ("check", {"run": RUN}),
            ("escalate_review", {"run": RUN}),
            ("record_review", {"run": RUN, "answer": "CONTINUE — flat at 3.0 with eval/acc 0.6 above 0.55: noise",
                               "reviewer": "subagent"}),
            ("schedule_next", {"run": RUN}),
        ],
    )  # fmt: skip
    assert CheckReport.model_validate(check).next_action == "escalate_review"
    asked = ReviewResult.model_validate(review)
    assert (asked.decision, asked.backend, asked.next_action, asked.reviewer_failed) == (
        "WAIT", "agent", "record_review", False,
    )  # fmt: skip
    assert "mcp__llm-chat__chat" in asked.summary and "record_review" in asked.summary
    prompt = asked.prompt or ""
    for expected in (
        "strict, high-rigour reviewer",
        "Run: flat",
        "latest step 5,990 of 20,000",
        "Training loss (loss) at 10 checkpoints",
        "Last evals of eval/acc",
        f"eval/acc {BASELINE}",
        "The judge said UNSURE",
        "Respond with exactly one of STOP / CONTINUE / WAIT",
    ):
        assert expected in prompt, expected
    answer = ReviewResult.model_validate(recorded)
    assert (answer.decision, answer.backend, answer.model, answer.next_action) == (
        "CONTINUE", "agent", "subagent", "schedule_next",
    )  # fmt: skip
    assert answer.reason == "flat at 3.0 with eval/acc 0.6 above 0.55: noise"
    assert answer.check_id == asked.check_id
    assert Schedule.model_validate(schedule).interval_minutes == 20, "CONTINUE: 10 → 20"


def test_a_reply_that_is_not_one_decision_is_a_wait_and_the_interval_stays(tmp_path):
    monitor = unsure_project(tmp_path)
    _, recorded, schedule = skill_loop(
        build_server(monitor),
        [
            ("escalate_review", {"run": RUN}),
            ("record_review", {"run": RUN, "answer": "Hard to say: STOP if it stays flat, else CONTINUE."}),
            ("schedule_next", {"run": RUN}),
        ],
    )
    answer = ReviewResult.model_validate(recorded)
    assert (answer.decision, answer.reviewer_failed, answer.next_action) == ("WAIT", True, "schedule_next")
    assert "not exactly one of STOP / CONTINUE / WAIT" in (answer.error or "")
    assert Schedule.model_validate(schedule).interval_minutes == 10


def test_a_recorded_stop_stops_the_configured_local_process(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (tmp_path / "train.pid").write_text(f"{sleeper.pid}\n")
        monitor = unsure_project(tmp_path, entry=STOP_ENTRY)
        reason = "loss flat at 3.0 for 6,000 of 20,000 steps with no LR change: not learning"
        _, recorded, stopped, schedule = skill_loop(
            build_server(monitor),
            [
                ("escalate_review", {"run": RUN}),
                ("record_review", {"run": RUN, "answer": f"**STOP** {reason}", "reviewer": "gpt-test via llm-chat"}),
                ("stop_run", {"run": RUN, "confirm": True, "reason": lambda r: r[1]["reason"]}),
                ("schedule_next", {"run": RUN}),
            ],
        )
        answer = ReviewResult.model_validate(recorded)
        assert (answer.decision, answer.next_action, answer.reason) == ("STOP", "stop_run", reason)
        result = StopResult.model_validate(stopped)
        assert result.outcome.value == "stopped" and sleeper.poll() is not None
    finally:
        sleeper.kill()
        sleeper.wait()
    assert Schedule.model_validate(schedule).monitoring is False
    incident = monitor.store.find_incident(monitor.context(RUN).key)
    assert incident is not None and incident["review"] == f"STOP by gpt-test via llm-chat: {reason}"


def test_record_review_without_an_unsure_verdict_says_what_to_do(tmp_path):
    (tmp_path / "train.log").write_text("step 1 | loss 2.0\n")
    (result,) = skill_loop(build_server(unsure_project(tmp_path)), [
        ("record_review", {"run": str(tmp_path / "train.log"), "answer": "STOP"}),
    ])  # fmt: skip
    assert isinstance(result, str) and "call `check`" in result


def test_cli_record_review_reads_the_reply_from_stdin(tmp_path, isolated_home):
    unsure_project(tmp_path).close()
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    base = [sys.executable, "-m", "mcp_training_check"]
    asked = subprocess.run([*base, "review", RUN], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert asked.returncode == 0, asked.stderr
    assert "Respond with exactly one of STOP / CONTINUE / WAIT" in asked.stdout
    assert f"training-check record-review {RUN} -" in asked.stdout
    done = subprocess.run(
        [*base, "record-review", RUN, "-", "--json"], input="WAIT\nonly 6,000 of 20,000 steps\n",
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    review = ReviewResult.model_validate(json.loads(done.stdout))
    assert (review.decision, review.backend, review.reason) == ("WAIT", "agent", "only 6,000 of 20,000 steps")


def test_cli_record_review_without_a_run_takes_the_projects_only_run(tmp_path, isolated_home):
    """`review` takes the project's only run without its name; `record-review -` then said "the following
    arguments are required: answer" (argparse read the '-' as the run)."""
    unsure_project(tmp_path).close()
    env = {**os.environ, "TRAINING_CHECK_HOME": str(isolated_home)}
    base = [sys.executable, "-m", "mcp_training_check"]
    asked = subprocess.run([*base, "review"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert asked.returncode == 0, asked.stderr
    done = subprocess.run(
        [*base, "record-review", "-", "--json"], input="CONTINUE: only 6,000 of 20,000 steps\n",
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    review = ReviewResult.model_validate(json.loads(done.stdout))
    assert (review.decision, review.reason) == ("CONTINUE", "only 6,000 of 20,000 steps")
    missing = subprocess.run([*base, "record-review"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert missing.returncode == 2 and "needs the reply" in missing.stderr and "Traceback" not in missing.stderr


# --------------------------------------------------------------------------- the reply parser


@pytest.mark.parametrize(
    ("reply", "decision", "reason"),
    [
        ("STOP", "STOP", "the reviewer gave no reason"),
        ("CONTINUE: noise around 3.0", "CONTINUE", "noise around 3.0"),
        ("**WAIT** — too early at 6,000 steps", "WAIT", "too early at 6,000 steps"),
        ("Continue. The loss will stop falling at the end.", "CONTINUE", "The loss will stop falling at the end."),
        ('{"decision": "STOP", "reason": "diverged"}', "STOP", "diverged"),
        ("STOP\n\nThe loss is NaN since step 1,000; STOP now.", "STOP", "The loss is NaN since step 1,000; STOP now."),
    ],
)
def test_a_reply_with_one_decision_first_is_that_decision(reply, decision, reason):
    answer = answer_from_reply(reply)
    assert (answer.decision, answer.reason) == (decision, reason)


@pytest.mark.parametrize(
    ("reply", "decision", "reason"),
    [  # a decision word that begins the reason's sentence keeps it ("Stop it now." gave "it now.")
        ("Stop it now.", "STOP", "Stop it now."),
        ("STOP: Stop it now", "STOP", "Stop it now"),
        ("**STOP** the loss is NaN since step 2,500", "STOP", "the loss is NaN since step 2,500"),
        ("Continue training: the loss fell 2.31 → 1.94", "CONTINUE", "Continue training: the loss fell 2.31 → 1.94"),
        ("Wait for two more evals.", "WAIT", "Wait for two more evals."),
        # a verdict set apart, with labels a model adds around it
        ("STOP\n\nReason: eval/acc fell from 0.86 to 0.24", "STOP", "eval/acc fell from 0.86 to 0.24"),
        ("Decision: STOP. Reason: loss NaN at step 3,099", "STOP", "loss NaN at step 3,099"),
        ("Verdict: **CONTINUE**\nThe loss falls 2.3 → 1.9", "CONTINUE", "The loss falls 2.3 → 1.9"),
        ("WAIT. Wait for the eval at step 8,000", "WAIT", "Wait for the eval at step 8,000"),
        ("Stop.", "STOP", "the reviewer gave no reason"),
    ],
)
def test_the_reason_is_never_cut_out_of_its_sentence(reply, decision, reason):
    answer = answer_from_reply(reply)
    assert (answer.decision, answer.reason) == (decision, reason)


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ("STOP or WAIT", "it names STOP and WAIT"),
        ("I think CONTINUE", "it does not start with one"),
        ("", "it does not start with one"),
        ("STOPPING is wise", "it does not start with one"),
        ("Stop it now, or WAIT for the eval", "it names STOP and WAIT"),
        ("Decision: maybe STOP", "it does not start with one"),
        ('{"decision": "MAYBE", "reason": "x"}', "decision: Input should be"),
    ],
)
def test_a_reply_that_is_not_exactly_one_decision_is_refused(reply, says):
    with pytest.raises(ReviewError, match=says):
        answer_from_reply(reply)


def test_a_recorded_reason_ending_a_sentence_reads_once_in_the_summary(tmp_path):
    """The summary put "; next:" after the reason's full stop ("... after 0.51.; next: stop_run")."""
    monitor = unsure_project(tmp_path)
    review = monitor.record_review(RUN, "Stop it now: the loss sits at 8.1 after 0.51.", reviewer="qa")
    assert (review.decision, review.reason) == ("STOP", "Stop it now: the loss sits at 8.1 after 0.51.")
    said = "reviewer qa (agent) says STOP: Stop it now: the loss sits at 8.1 after 0.51; next: stop_run"
    assert review.summary == said


def test_a_check_without_new_points_after_an_answered_review_asks_no_review_again(tmp_path):
    """A log that stopped growing with an unsure verdict asked for a review at every check, the same points
    each time (with an API key: a paid call every 10 minutes). Once a reviewer answered, a check that read
    nothing new goes on monitoring; one whose question is still unanswered asks it."""
    monitor = unsure_project(tmp_path)
    unanswered = monitor.check(RUN)  # no new points, and the first check's question was never put
    assert unanswered.next_action == "escalate_review", unanswered.summary
    monitor.escalate_review(RUN)  # the agent backend hands over the prompt: still no answer
    assert monitor.check(RUN).next_action == "escalate_review"
    monitor.escalate_review(RUN)
    monitor.record_review(RUN, "WAIT: only 6,000 of 20,000 steps, flat at 3.0", reviewer="qa")
    for _ in range(2):
        stalled = monitor.check(RUN)
        assert stalled.verdict is not None and stalled.verdict.decision == "unsure"
        assert stalled.next_action == "continue_monitoring", stalled.summary
