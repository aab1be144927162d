"""Process facts read from /proc (Linux): child pids, CPU time and resident memory, with a peak sampler."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path


def child_pids(parent: int | None = None, must_contain: str = "") -> list[int]:
    """Pids whose parent is ``parent`` (default: this process) and whose command line contains ``must_contain``."""
    parent = os.getpid() if parent is None else parent
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and must_contain in cmd:
            out.append(int(p.name))
    return out


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MiB (VmRSS); NaN if the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_s(pids: Sequence[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have used so far (every thread; from
    /proc/PID/stat); NaN if any is gone. Differences of it are what a stretch of work cost the
    machine, which its load distorts far less than wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total if pids else float("nan")


def rss_total_mb(pids: Sequence[int]) -> float:
    """Summed resident set size of ``pids`` in MiB; NaN if any of them is gone (or none is given)."""
    return sum(rss_mb(p) for p in pids) if pids else float("nan")


class PeakRss:
    """Samples the RSS of ``pid`` (or the sum over several pids) every ``interval`` seconds in a thread.

    ``peak`` is the max seen (MiB); a sample where a process is gone is skipped.
    """

    def __init__(self, pid: int | Sequence[int], interval: float = 0.02) -> None:
        self.pids = [pid] if isinstance(pid, int) else list(pid)
        self.interval, self.peak = interval, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            v = rss_total_mb(self.pids)
            if v == v:
                self.peak = max(self.peak, v)
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
