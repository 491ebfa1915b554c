"""Every error this package raises on purpose.

    TrainingCheckError
    ├── ConfigError            the project file or an argument is wrong (names the line or argument)
    ├── RunRefError            the `run` string cannot be understood
    ├── SourceError
    │   ├── RunNotFound        nothing at that path / id
    │   ├── SourceUnavailable  the place exists but cannot be read now (network, permissions)
    │   └── MetricMissing      the run has no metric the judge can use
    ├── StateError             the state database cannot be opened or is locked too long
    ├── ReviewError            the external reviewer failed (callers turn this into WAIT)
    ├── NothingToReview        escalate_review was called without a stored unsure verdict
    ├── NotCheckedYet          schedule_next was called for a run never read
    └── StopError              the run could not be stopped, or stopping is not configured

Each message says what was wrong, with the value, and how to fix it. Exceptions from third-party
libraries are translated where that library is called (``raise ... from exc``).
"""

from __future__ import annotations


class TrainingCheckError(Exception):
    """Base of every error raised on purpose by mcp-training-check."""


class ConfigError(TrainingCheckError):
    """The configuration file or a tool argument is invalid."""


class RunRefError(TrainingCheckError):
    """The `run` argument cannot be parsed into a run reference."""


class SourceError(TrainingCheckError):
    """Metrics could not be read from a source."""


class RunNotFound(SourceError):
    """The run (path, file or id) does not exist."""


class SourceUnavailable(SourceError):
    """The source exists but cannot be reached or read right now."""


class MetricMissing(SourceError):
    """The run has no metric that can be judged."""


class StateError(TrainingCheckError):
    """The on-disk state cannot be used."""


class ReviewError(TrainingCheckError):
    """The external LLM reviewer failed."""


class NothingToReview(TrainingCheckError):
    """escalate_review has no stored unsure verdict to review (never checked, or not unsure)."""


class NotCheckedYet(TrainingCheckError):
    """schedule_next was called for a run that no check (or judge) has read yet."""


class StopError(TrainingCheckError):
    """The run could not be stopped, or no way to stop it is configured."""
