"""Definition-looking lines of code in many languages, and the name they define.

Each pattern is matched on at most the first 300 characters of a line.
"""

from __future__ import annotations

import re

_DEF_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # JavaScript / TypeScript
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*(?:\*\s*)?([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?(?:(?:public|private|protected|internal|sealed|static|final|data|open)\s+)*(?:class|interface|enum|trait|object|record|struct)\s+([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)",
        r"^(?:export\s+)?(?:declare\s+)?(?:type|namespace|module)\s+([A-Za-z_$][\w$.]*)",
        # Go
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",
        r"^type\s+([A-Za-z_]\w*)",
        # Rust
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern\s+\"[^\"]*\")\s+)*fn\s+([A-Za-z_]\w*)",
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod|macro_rules!)\s*([A-Za-z_]\w*)",
        r"^impl(?:<[^>]*>)?\s+(?:[\w:<>, &']+\s+for\s+)?([A-Za-z_][\w:]*)",
        # Ruby, Elixir, Python-like
        r"^(?:def|defp|defmodule|defmacro|module|class)\s+(?:self\.)?([A-Za-z_][\w:.]*[?!=]?)",
        # Kotlin, Swift, Scala, Lua, PHP, shell
        r"^(?:(?:public|private|protected|internal|open|override|suspend|inline|static|final|abstract|local)\s+)*(?:fun|func|def|function)\s+(?:<[^>]*>\s*)?(?:[\w.]+\.)?&?([A-Za-z_][\w-]*)",
        r"^([A-Za-z_][\w-]*)\s*\(\)\s*\{",
        # Java, C#, C, C++ (a line that opens a definition: type ... name(args) without ';')
        r"^(?!(?:if|for|while|switch|return|else|do|case|catch|sizeof|typedef)\b)(?:[\w:<>,\[\]\*&~]+\s+)+\**&?([A-Za-z_][\w:~]*)\s*\([^;]*$",
        r"^(?:typedef\s+)?(?:struct|union|enum|class|namespace)\s+([A-Za-z_]\w*)",
    )
)


def _match_def(line: str) -> str | None:
    line = line[:300]  # a minified megabyte line must not meet a backtracking pattern whole
    for pat in _DEF_PATTERNS:
        m = pat.match(line)
        if m:
            return m.group(1)
    return None


def _first_symbol(lines: list[str], start: int, end: int, *, top_level: bool) -> str | None:
    """Name in the first definition-looking line of lines start..end (column 0 only if top_level)."""
    for n in range(start, end + 1):
        line = lines[n - 1]
        if top_level and line[:1].isspace():
            continue
        name = _match_def(line.strip() if not top_level else line)
        if name:
            return name
    return None
