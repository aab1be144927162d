"""memvault benchmarks: retrieval quality (LoCoMo, LongMemEval_S) and speed over MCP.

Data is read by path (default ``../shared/bench`` next to the repository, ``--data`` to
override) and never copied into the repository. Results go to ``bench/results/``
(gitignored) as JSON, and each module prints a Markdown table on stdout.
"""
