"""Every test gets its own state directory and no project config from the machine it runs on."""

from __future__ import annotations

import pytest

from .sshd import silent_port, ssh_home, sshd_server  # noqa: F401  (fixtures of the SSH tests)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    home = tmp_path / "training-check-home"
    monkeypatch.setenv("TRAINING_CHECK_HOME", str(home))
    monkeypatch.delenv("TRAINING_CHECK_CONFIG", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_MODE", "offline")
    return home
