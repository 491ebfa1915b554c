"""What the user says: the project file ``training-check.toml`` and the one ``run`` string every tool takes.

    project     where the file is found, what a run entry resolves to (`ResolvedRunConfig`), overrides
    reload      the file re-read when it changes, for the server and the watch loop (`ReloadingConfig`)
    schema      the file's sections, limits and defaults (pydantic)
    messages    a bad file's messages, ``FILE:LINE: table.key: what is wrong and the fix``
    toml_lines  where each key of a TOML text is written (for those messages)
    runref      ``run`` string → `RunRef` (local log, W&B directory or path, W&B run/sweep/project, ssh://)
    scaffold    a run entry appended to the file for a person (`training-check init`), checked before it is written

The lowest stage: it imports only the shared models and errors, and every later stage reads it.
"""

from .project import CONFIG_ENV, CONFIG_NAME, ProjectConfig, ResolvedRunConfig, apply_overrides, load_config
from .reload import ReloadingConfig
from .runref import RUN_ID, WANDB_RUN_PATH, parse_run
from .scaffold import NewRun, add_run
from .schema import (
    DEFAULT_NOTES,
    DEFAULT_REVIEW_MODEL,
    DEFAULT_REVIEW_TIMEOUT_SECONDS,
    Defaults,
    ReviewSettings,
    RunEntry,
    StopSettings,
)
from .toml_lines import key_lines

__all__ = [
    "CONFIG_ENV",
    "CONFIG_NAME",
    "DEFAULT_NOTES",
    "DEFAULT_REVIEW_MODEL",
    "DEFAULT_REVIEW_TIMEOUT_SECONDS",
    "RUN_ID",
    "WANDB_RUN_PATH",
    "Defaults",
    "NewRun",
    "ProjectConfig",
    "ReloadingConfig",
    "ResolvedRunConfig",
    "ReviewSettings",
    "RunEntry",
    "StopSettings",
    "add_run",
    "apply_overrides",
    "key_lines",
    "load_config",
    "parse_run",
]
