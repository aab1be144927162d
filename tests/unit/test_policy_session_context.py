"""policy.session_context: the session block's layout and its token budget."""

from __future__ import annotations

import pytest

from memvault.policy.session_context import (
    ContextMemory,
    ContextPreference,
    ContextTask,
    SessionContext,
    estimate_tokens,
    render_session_context,
)


def test_estimate_counts_ascii_by_four_and_other_characters_by_one():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("部署前") == 3
    assert estimate_tokens("ab部署") == 3


def full(n: int = 40) -> SessionContext:
    return SessionContext(
        project_name="shop",
        preferences=[ContextPreference(f"pref.k{i}", f"value {i}", "global") for i in range(n)],
        tasks=[ContextTask(f"t{i}", f"Task {i}", "active", f"step {i}", "2026-11-30") for i in range(n)],
        project_memories=[ContextMemory(f"Project memory {i}: " + "detail " * 20, "fact", "2026-11-29")
                          for i in range(n)],
        global_memories=[ContextMemory(f"全局记忆 {i}：" + "用户喜欢简洁的回答" * 4, "preference", "2026-11-01")
                         for i in range(n)],
    )


@pytest.mark.parametrize("budget", [80, 150, 500, 2000, 8000])
def test_the_block_stays_within_the_budget_and_every_section_gets_room(budget):
    text = render_session_context(full(), budget)
    assert 0 < estimate_tokens(text) <= budget
    if budget >= 500:  # with room for a few items, one long list does not crowd out the others
        for header in ("## Preferences", "## Open tasks", "## This project", "## Global"):
            assert header in text


def test_order_is_kept_and_long_items_are_cut_with_a_marker():
    ctx = SessionContext("shop", project_memories=[ContextMemory("first " * 200, "fact", "2026-11-29"),
                                                   ContextMemory("second", "fact", "2026-11-28")])
    text = render_session_context(ctx, 2000)
    lines = text.split("## This project\n", 1)[1].splitlines()
    assert lines[0].startswith("- first first") and "…[truncated:" in lines[0]
    assert lines[1] == "- second (fact, 2026-11-28)"


def test_tasks_show_their_step_and_multi_line_text_becomes_one_line():
    ctx = SessionContext("", tasks=[ContextTask("fix-refunds", "Fix\nrefunds", "blocked", "write the test", "2026-11-30")],
                         global_memories=[ContextMemory("line one\nline two", "note", "2026-11-30")])
    text = render_session_context(ctx, 500)
    assert "- `fix-refunds` Fix refunds [blocked, 2026-11-30] — now: write the test" in text
    assert "## Memories\n- line one line two (note, 2026-11-30)" in text  # no project: one list, no "Global"
    assert "(no project: global memories)" in text


def test_nothing_to_show_is_an_empty_block():
    assert render_session_context(SessionContext("shop"), 2000) == ""


def test_a_budget_too_small_for_any_block_is_refused():
    with pytest.raises(ValueError, match="max_tokens must be at least 60, got 10"):
        render_session_context(full(), 10)
