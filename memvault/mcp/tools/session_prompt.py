"""The ``save_session`` prompt: at the end of a conversation, keep what mattered with ``remember``.

A client shows prompts to its user (a slash command, a menu entry); picking this one puts
the text of ``save_session_text`` in front of the assistant, which then calls ``remember``
for the few durable facts, decisions and lessons of the session, so that they outlive
the conversation. The prompt only asks: the writes go through ``remember`` and its
policies (secrets refused, importance scored, duplicates reinforced) like any other.
"""

from __future__ import annotations

import json
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from memvault.service.validation import check_project
from memvault.vocabulary import KINDS

SAVE_SESSION_DESCRIPTION = "Before the conversation ends: save its few durable facts, decisions and lessons with remember."


def save_session_text(project: str | None = None) -> str:
    """The prompt's text for the assistant; ``project``: where every memory goes (None: the
    current project, as ``remember`` decides). Raises InvalidArgument for a bad project name."""
    project = check_project(project)
    where = "" if project is None else (
        f"\n- Pass project={json.dumps(project)} to every call (\"\" is the user's global scope)."
    )
    return f"""\
This conversation is ending. Save what should outlive it with memvault's `remember` tool, \
so that a later session (in any client of this user) knows it without being told again.

1. Pick the few durable items of this session, usually none to five: facts about the user \
or the project, decisions and their reasons, preferences the user stated, and lessons \
learned (what fixed a problem, what to avoid).
2. Call `remember` once per item:
- content: one self-contained sentence that is clear without this conversation (name the \
thing instead of "it" or "this"), in the user's language.
- kind: one of {", ".join(KINDS)} (preference for a stated wish, decision with its reason, \
procedure for how to do something, episode for what happened).
- key for a value that a later one should replace, e.g. pref.test_runner; reuse the key \
of a memory you recalled when this session changed it.
- project="" for what holds everywhere (the user's own preferences); omit it for facts \
of the current project.
- visibility="private" only for what concerns this agent alone; shared is the default.{where}
3. Do not save secrets (passwords, tokens, keys, connection strings) or personal data the \
user did not ask you to keep; nothing transient (error output, file contents, intermediate \
steps, what the code or its docs already say); nothing already stored unchanged.
4. Read each reply: declined says why (force=true only for what truly matters; never for \
a secret); reinforced means it was known already.

Then tell the user in one line what you saved, or that nothing needed saving."""


def register_session_prompt(mcp: MCPServer) -> None:
    """Register the ``save_session`` prompt on ``mcp``."""

    @mcp.prompt(name="save_session", title="Save session", description=SAVE_SESSION_DESCRIPTION)
    def save_session(
        project: Annotated[str | None, Field(description="Save to this project ('' = global); omit for the "
                                                         "current one.")] = None,
    ) -> str:
        return save_session_text(project)
