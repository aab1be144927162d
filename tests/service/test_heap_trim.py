"""The server gives its freed heap back to the OS once a burst of calls is over, never during one."""

from __future__ import annotations

import anyio
import pytest

from memvault.service.upkeep import housekeeping
from tests.conftest import call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PERIOD_S = 0.2  # the housekeeping timer's period in these tests (FLUSH_INTERVAL_S)


async def test_the_heap_is_trimmed_once_after_a_burst_and_not_while_idle(mcp_client, monkeypatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(housekeeping, "give_back_heap", lambda: trims.append(1))
    monkeypatch.setattr(housekeeping, "FLUSH_INTERVAL_S", PERIOD_S)
    async with mcp_client() as c:
        await call(c, "recall", query="anything at all")  # waits for the model: start-up work is done
        await anyio.sleep(6 * PERIOD_S)
        trims.clear()  # start-up's own burst (index checks, model load) may have been trimmed
        await anyio.sleep(6 * PERIOD_S)
        assert trims == []  # idle, nothing owed: no trim

        for i in range(3):
            await call(c, "remember", content=f"The billing service {i} moved to Postgres 16 in June", force=True)
        await anyio.sleep(8 * PERIOD_S)
        assert len(trims) == 1  # one trim after the burst, none on the idle periods after it

        await call(c, "recall", query="Where did the billing service move?")
        await anyio.sleep(8 * PERIOD_S)
        assert len(trims) == 2


async def test_no_trim_while_calls_keep_coming(mcp_client, monkeypatch) -> None:
    trims: list[int] = []
    monkeypatch.setattr(housekeeping, "FLUSH_INTERVAL_S", PERIOD_S)
    async with mcp_client() as c:
        await call(c, "recall", query="anything at all")
        await anyio.sleep(6 * PERIOD_S)
        monkeypatch.setattr(housekeeping, "give_back_heap", lambda: trims.append(1))
        with anyio.move_on_after(8 * PERIOD_S):
            i = 0
            while True:  # a call at least every half period: never a whole idle period
                await call(c, "recall", query=f"question number {i} about the deploy window")
                i += 1
                await anyio.sleep(PERIOD_S / 4)
        assert trims == []
