"""Cutting a bulk embedding job into model runs bounded in texts and padded token positions.

A run pads every text to its longest one, and its activations grow with texts x tokens
(the attention scores with texts x tokens^2): 32 passages of 512 tokens take about 1 GB.
Runs of length-sorted texts within ``RUN_POSITIONS`` keep that to tens of MB, waste
little on padding, and are short enough for a job to stop between two of them.
"""

from __future__ import annotations

from collections.abc import Sequence

RUN_POSITIONS = 2048
"""Padded token positions (texts x the longest one's tokens) of one model run at most."""


def plan_runs(lengths: Sequence[int], max_rows: int, max_positions: int = RUN_POSITIONS) -> list[list[int]]:
    """Indices of ``lengths`` (tokens of each text) grouped into model runs: sorted by length
    (less padding), each run at most ``max_rows`` texts and ``rows x longest <= max_positions``
    (a text longer than that alone). Every index appears once."""
    runs: list[list[int]] = []
    run: list[int] = []
    width = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        wider = max(width, lengths[i])
        if run and (len(run) >= max_rows or (len(run) + 1) * wider > max_positions):
            runs.append(run)
            run, wider = [], lengths[i]
        run.append(i)
        width = wider
    if run:
        runs.append(run)
    return runs
