"""JSON Merge Patch against RFC 7396 (appendix A and the section 3 example)."""

from __future__ import annotations

import copy
import json

import pytest

from memvault.policy.merge_patch import merge_patch

# RFC 7396 appendix A, verbatim: (original, patch, result).
APPENDIX_A = [
    ('{"a":"b"}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"b"}', '{"b":"c"}', '{"a":"b","b":"c"}'),
    ('{"a":"b"}', '{"a":null}', '{}'),
    ('{"a":"b","b":"c"}', '{"a":null}', '{"b":"c"}'),
    ('{"a":["b"]}', '{"a":"c"}', '{"a":"c"}'),
    ('{"a":"c"}', '{"a":["b"]}', '{"a":["b"]}'),
    ('{"a":{"b":"c"}}', '{"a":{"b":"d","c":null}}', '{"a":{"b":"d"}}'),
    ('{"a":[{"b":"c"}]}', '{"a":[1]}', '{"a":[1]}'),
    ('["a","b"]', '["c","d"]', '["c","d"]'),
    ('{"a":"b"}', '["c"]', '["c"]'),
    ('{"a":"foo"}', 'null', 'null'),
    ('{"a":"foo"}', '"bar"', '"bar"'),
    ('{"e":null}', '{"a":1}', '{"e":null,"a":1}'),
    ('[1,2]', '{"a":"b","c":null}', '{"a":"b"}'),
    ('{}', '{"a":{"bb":{"ccc":null}}}', '{"a":{"bb":{}}}'),
]


@pytest.mark.parametrize(("original", "patch", "result"), APPENDIX_A)
def test_rfc7396_appendix_a(original: str, patch: str, result: str) -> None:
    assert merge_patch(json.loads(original), json.loads(patch)) == json.loads(result)


def test_rfc7396_section_3_example() -> None:
    target = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"},
              "tags": ["example", "sample"], "content": "This will be unchanged"}
    patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": None}, "tags": ["example"]}
    assert merge_patch(target, patch) == {
        "title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
        "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890",
    }


def test_inputs_are_not_modified_and_result_does_not_alias_patch() -> None:
    target = {"a": {"b": 1, "keep": [1, 2]}, "x": 1}
    patch = {"a": {"b": None, "c": {"d": [3]}}, "x": None}
    t0, p0 = copy.deepcopy(target), copy.deepcopy(patch)
    out = merge_patch(target, patch)
    assert out == {"a": {"keep": [1, 2], "c": {"d": [3]}}}
    assert target == t0 and patch == p0
    out["a"]["c"]["d"].append(4)
    assert patch == p0
