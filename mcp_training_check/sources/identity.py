"""What tells an appended file from a replaced one, for every source that reads a file from an offset (text logs,
event files; locally and over SSH)."""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = ["HEAD_BYTES", "file_identity", "local_identity", "same_file"]

HEAD_BYTES = 4096  # bytes hashed to tell a replaced file from an appended one


def file_identity(*, inode: int | None, dev: int | None, size: int, head: bytes) -> dict[str, Any]:
    """What tells an appended file from a replaced one: inode and device (None when the place cannot
    say, e.g. over SFTP without a shell), size, and a crc of the first ``HEAD_BYTES``."""
    return {"inode": inode, "dev": dev, "size": size, "head_len": len(head), "head_crc": zlib.crc32(head)}


def local_identity(fh: Any) -> tuple[dict[str, Any], bytes]:
    """The identity and head of a local file open at its start (`file_identity`); ``fh`` is left after its head."""
    st = os.fstat(fh.fileno())
    head = fh.read(HEAD_BYTES)
    return file_identity(inode=st.st_ino, dev=st.st_dev, size=st.st_size, head=head), head


def same_file(old: Any, new: Mapping[str, Any], head: bytes, offset: int) -> bool:
    """Same file, only appended to: same inode and device, not shorter, same first bytes as before."""
    if not isinstance(old, Mapping):
        return False
    try:
        if (old["inode"], old["dev"]) != (new["inode"], new["dev"]) or new["size"] < offset:
            return False
        return zlib.crc32(head[: int(old["head_len"])]) == old["head_crc"] and len(head) >= old["head_len"]
    except (KeyError, TypeError, ValueError):
        return False
