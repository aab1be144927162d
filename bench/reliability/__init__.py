"""Reliability runs of memvault from outside, through real ``memvault serve`` processes.

``python -m bench.reliability crash|isolation|hostile|erasure|all [--quick]``: kill -9
under concurrent writes (``crash``), scope isolation between users and projects
(``isolation``), hostile inputs to every tool, prompt and resource (``hostile``), and
what a hard forget leaves on disk (``erasure``). Each prints a summary table and writes
its JSON to ``bench/results/reliability-<name>-<time>.json``. docs/reliability.md has the
protocols and the figures.
"""
