"""Unexpected failures as sentences for a person: what went wrong, where, and what to do.

memvault's own errors (``memvault.service.errors``) are written for a person when they
are raised. Everything else that can escape a call, an ``OSError`` (a full disk, a
read-only folder), an ``sqlite3`` error (``database or disk is full``, a damaged file),
a ``ValueError`` from the standard library (``embedded null byte``), a
``UnicodeError`` (text holding a lone surrogate), is turned into one such sentence by
``explain``; ``open_failure`` does the same for the start-up of a data dir (the data dir
itself, the SQLite file), naming the command that fixes it. The faces (MCP, CLI) pass
the sentence on and log the traceback.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from memvault.service.errors import MemvaultError
from memvault.storage.vectors.edge_disk import DiskFull

MAX_CHARS = 600
"""Longest explanation: an exception's text can quote a whole argument back."""

_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NO_ACCESS = {errno.EACCES, errno.EPERM, errno.EROFS}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def _errno_name(code: int | None) -> str:
    return errno.errorcode.get(code, "") if code is not None else ""


def _os_sentence(exc: OSError) -> str:
    """``strerror (ENAME): path`` plus what to do for the errno."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    name = _errno_name(exc.errno)
    where = f" at {exc.filename}" if exc.filename else ""
    head = f"{reason}{f' ({name})' if name else ''}{where}"
    if exc.errno == errno.EFBIG:
        return (f"{head}: the file reached a size limit (this process's ulimit -f, or the file system's largest "
                "file); raise the limit, then try again")
    if exc.errno in _DISK_FULL:
        return f"{head}: the disk (or your quota) is full; free space there and try again"
    if exc.errno in _NO_ACCESS:
        return f"{head}: memvault may not write there; fix the permissions or point MEMVAULT_DATA_DIR elsewhere"
    if exc.errno == errno.ENOENT:
        return f"{head}: it does not exist; check the path"
    if exc.errno in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return f"{head}: a file is where a folder should be (or the other way round); check the path"
    if exc.errno == errno.ENAMETOOLONG:
        return f"{head}: use a shorter path"
    return f"{head}; check the path and the disk, then try again"


def _sqlite_sentence(exc: sqlite3.Error, db: Path | None) -> str:
    text = str(exc) or type(exc).__name__
    where = f" {db}" if db is not None else ""
    low = text.lower()
    if "full" in low:
        return (f"the memory database{where} could not be written: {text}. Free space on the disk that holds "
                "it and try again; nothing of this call was kept")
    if "locked" in low or "busy" in low:
        return f"the memory database{where} is busy ({text}): another process holds it; try again in a moment"
    if "readonly" in low or "read-only" in low:
        return (f"the memory database{where} is read-only ({text}); make it and its folder writable by this "
                "user, or point MEMVAULT_DATA_DIR elsewhere")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return (f"the memory database{where} is damaged ({text}); run `memvault doctor` for what to do")
    code = getattr(exc, "sqlite_errorname", None)
    said = f"{text}, {code}" if code else text
    if "disk i/o" in low:
        return (f"the memory database{where} could not be written or read ({said}): the disk may be full, failing "
                "or over this process's file size limit (ulimit -f); check it, then try again")
    if "unable to open" in low:
        return f"the memory database{where} could not be opened ({said}); check the disk and its permissions"
    return f"the memory database{where} failed: {said}"


def explain(exc: BaseException, *, db: Path | None = None) -> str:
    """One sentence (at most ``MAX_CHARS``) naming the cause of ``exc`` and what to do about it.

    ``db``: the SQLite file, named in database failures. Never raises.
    """
    try:
        if isinstance(exc, MemvaultError | DiskFull):  # DiskFull: already names the disk and what to free
            return _cut(str(exc))
        if isinstance(exc, sqlite3.Error):
            return _cut(_sqlite_sentence(exc, db))
        if isinstance(exc, OSError):
            return _cut(_os_sentence(exc))
        if isinstance(exc, UnicodeError):
            return _cut(f"text that is not valid Unicode ({exc.reason if hasattr(exc, 'reason') else exc}): "
                        "an argument holds a lone UTF-16 surrogate or undecodable bytes; send valid UTF-8 text")
        if isinstance(exc, MemoryError):
            return "the request needs more memory than memvault has; send smaller arguments"
        if isinstance(exc, RecursionError):
            return "an argument is nested too deeply to process; send flatter arguments"
        text = str(exc).strip()
        if isinstance(exc, ValueError) and "null" in text.lower() and ("byte" in text.lower()
                                                                       or "character" in text.lower()):
            return _cut(f"{text}: an argument holds a NUL character (\\x00), which paths and text here "
                        "cannot carry; remove it")
        kind = type(exc).__name__
        said = f"{kind}: {text}" if text else kind
        return _cut(f"{said}. If the arguments look right, this is a memvault bug: the server's log (stderr) "
                    "holds the traceback")
    except Exception:  # explaining must never fail the answer
        return type(exc).__name__


def open_failure(exc: BaseException, data_dir: Path, db: Path) -> str:
    """Why the data dir ``data_dir`` (its SQLite file ``db``) could not be opened, and what to do.

    For ``Runtime.open``'s failures: the data dir is a file, cannot be created or written,
    the database is not SQLite or is damaged, or written by a newer memvault. Never raises.
    """
    try:
        if isinstance(exc, MemvaultError):
            return str(exc)
        if isinstance(exc, OSError):
            if exc.errno in (errno.EEXIST, errno.ENOTDIR) and not data_dir.is_dir():
                return (f"the data dir {data_dir} is not a folder (a file is in its way). Set MEMVAULT_DATA_DIR to "
                        f"a folder (or move that file away), then restart your MCP client")
            if exc.errno in _NO_ACCESS:
                return (f"memvault cannot write its data dir {data_dir}: {exc.strerror}"
                        f"{f' at {exc.filename}' if exc.filename else ''}. Make it writable by this user "
                        f"(chmod u+rwx {data_dir}) or set MEMVAULT_DATA_DIR to a folder you can write, then "
                        "restart your MCP client")
            if exc.errno in _DISK_FULL:
                return (f"the disk that holds {data_dir} is full ({exc.strerror}); free space, then restart your "
                        "MCP client")
            return f"the data dir {data_dir} cannot be used: {_os_sentence(exc)}; then restart your MCP client"
        if isinstance(exc, sqlite3.Error):
            text = str(exc) or type(exc).__name__
            low = text.lower()
            if "not a database" in low or "malformed" in low or "corrupt" in low:
                return (f"{db} is not a readable memvault database (SQLite says: {text}). Move it aside "
                        f"(mv {db} {db}.broken) and restart your MCP client to start with an empty store, or put "
                        "a backup in its place; `memvault doctor` checks it")
            if "locked" in low or "busy" in low:
                return (f"{db} is locked by another process ({text}); close the other memvault (memvault doctor "
                        "shows the owner) and restart your MCP client")
            return (f"{db} cannot be opened ({text}); check that it and {data_dir} are readable and writable by "
                    f"this user (ls -l {data_dir}), then restart your MCP client")
        if type(exc).__name__ == "SchemaTooNew":  # its message already says what to do
            return str(exc)
        return f"memvault could not open {data_dir}: {explain(exc, db=db)}"
    except Exception:
        return f"memvault could not open {data_dir}: {type(exc).__name__}"
