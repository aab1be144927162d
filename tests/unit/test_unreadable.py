"""The answer to a line the MCP library cannot read (memvault.mcp.unreadable), as a pure function.

Each case is a line the SDK's own parser refuses (checked here, so that a later SDK that
reads it makes the case moot rather than silently untested), and what memvault answers.
"""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from memvault.mcp.unreadable import replies_to_unreadable


def sdk_refuses(line: str) -> bool:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:
        return True
    return False


def answers(line: str) -> list[dict]:
    assert sdk_refuses(line), f"the SDK reads this line: {line[:80]}"
    out = replies_to_unreadable(line)
    for reply in out:
        assert reply.isascii() and "\n" not in reply
    return [json.loads(r) for r in out]


def call(msg_id: object, arguments: str) -> str:
    return ('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"method":"tools/call",'
            '"params":{"name":"recall","arguments":' + arguments + "}}")


def test_a_lone_surrogate_is_named_with_where_it_is():
    [got] = answers(call(7, '{"query":"abc\\ud800def"}'))
    assert got["id"] == 7 and got["error"]["code"] == -32602
    assert "params.arguments.query holds a lone UTF-16 surrogate (\\ud800)" in got["error"]["message"]
    assert "valid UTF-8" in got["error"]["message"]


@pytest.mark.parametrize("arguments,where", [
    ('{"tags":["ok","\\udc00"]}', "params.arguments.tags[1]"),
    ('{"\\udfff":1}', "a key in params.arguments"),
])
def test_a_surrogate_in_a_list_or_a_key(arguments, where):
    [got] = answers(call("s-1", arguments))
    assert got["id"] == "s-1" and where in got["error"]["message"]


def test_a_surrogate_pair_is_text_and_no_case():
    assert not sdk_refuses(call(1, '{"query":"\\ud83d\\ude00"}'))


@pytest.mark.parametrize("depth,code", [(250, -32602), (3000, -32700)])
def test_nesting_past_the_limit_says_how_deep_is_allowed(depth, code):
    [got] = answers(call(9, '{"tags":' + "[" * depth + "]" * depth + "}"))
    assert got["id"] == 9 and got["error"]["code"] == code
    assert "200 levels" in got["error"]["message"] and "flatter" in got["error"]["message"]


def test_broken_json_is_answered_when_its_id_can_be_found():
    [got] = answers('{"jsonrpc":"2.0","method":"ping","id":"abc", "params": {,}}')
    assert got["id"] == "abc" and got["error"]["code"] == -32700
    assert "not valid JSON" in got["error"]["message"]


def test_the_id_scan_reads_only_the_top_level_object():
    # an "id" inside a string or a nested object is not the request's id
    line = '{"jsonrpc":"2.0","params":{"id":5,"text":"\\"id\\": 6"},"method":"x","id":42,,}'
    [got] = answers(line)
    assert got["id"] == 42


@pytest.mark.parametrize("line", [
    "this is not json",
    '{"jsonrpc":"2.0","method":"ping",,}',  # no id: nothing to correlate
    '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\\ud800"}}',  # a notification
    '{"jsonrpc":"2.0","id":3,"result":{"text":"\\ud800"}}',  # a response to the server
    '"a string"',
])
def test_lines_without_a_request_to_answer_get_no_reply(line):
    assert answers(line) == []


def test_the_wrong_shape_says_what_a_request_needs():
    for line in ('{"jsonrpc":"2.0","id":1,"method":7}', '{"jsonrpc":"1.0","id":1,"method":"ping"}',
                 '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}'):
        [got] = answers(line)
        assert got["error"]["code"] == -32600 and '"jsonrpc": "2.0"' in got["error"]["message"], line


def test_a_batch_gets_one_answer_per_request():
    got = answers('[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},'
                  '{"jsonrpc":"2.0","id":"b","method":"tools/list"}]')
    assert [g["id"] for g in got] == [1, "b"]
    assert all("batches" in g["error"]["message"] for g in got)


def test_an_id_holding_a_surrogate_is_echoed_as_an_escape():
    [got] = answers('{"jsonrpc":"2.0","id":"x\\ud800","method":"ping"}')
    assert got["id"] == "x\ud800"


def test_a_reply_utf8_cannot_carry_is_sent_with_replacements():
    """A result holding a lone surrogate would make the SDK's writer fail and end the connection."""
    from memvault.mcp.transport import _encode

    reply = types.JSONRPCResponse(jsonrpc="2.0", id=5, result={"text": "ok \ud800 ok", "n": 1})
    line = _encode(reply)
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 5, "result": {"text": "ok \ufffd ok", "n": 1}}
    line.encode("utf-8")  # the wire's encoding accepts it
