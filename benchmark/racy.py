"""Git's "racily clean" rule, for the memos that trust a file's (size, mtime) (store/done_index.py,
run/code_parts.py): a file changed less than RACY_NS ago may be written again within its mtime's tick
and keep it, so its stat proves nothing yet and its contents decide."""

from __future__ import annotations

RACY_NS = 2_000_000_000  # 2 s: coarser than any file system's mtime tick that fedbench meets


def racy(mtime_ns: int, now_ns: int) -> bool:
    """Whether a file last changed at `mtime_ns` is still too fresh, at `now_ns`, for its stat to be trusted."""
    return now_ns - mtime_ns < RACY_NS
