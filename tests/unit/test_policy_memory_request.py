"""policy.memory_request: which prompts ask memvault to keep something, and what is kept."""

from __future__ import annotations

import pytest

from memvault.policy.memory_request import MAX_REQUESTS, MemoryRequest, find_memory_requests


def one(prompt: str) -> MemoryRequest:
    found = find_memory_requests(prompt)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(("prompt", "content", "kind"), [
    ("remember that I prefer tabs over spaces", "I prefer tabs over spaces", "fact"),
    ("Please remember that the staging DB is db.internal. Then fix the login bug.",
     "The staging DB is db.internal.", "fact"),
    ("Remember: the API key lives in 1Password under 'billing'", "The API key lives in 1Password under 'billing'",
     "fact"),
    ("remember this: the dev server runs on port 8080", "The dev server runs on port 8080", "fact"),
    ("btw, don't forget that deploys happen on Fridays, thanks!", "Deploys happen on Fridays", "fact"),
    ("Keep in mind that the API is rate limited to 10 rps.", "The API is rate limited to 10 rps.", "fact"),
    ("Can you remember that I use vim?", "I use vim", "fact"),  # a polite question is a request
    ("From now on, answer in English.", "From now on, answer in English.", "preference"),
    ("Use pnpm from now on please", "Use pnpm from now on", "preference"),
    ("ok so going forward: no semicolons in TypeScript", "Going forward: no semicolons in TypeScript", "preference"),
    ("记住：部署前要先跑集成测试。", "部署前要先跑集成测试。", "fact"),
    ("请记住我喜欢用 tab 缩进", "我喜欢用 tab 缩进", "fact"),
    ("帮我记一下，测试数据库在 10.0.0.5", "测试数据库在 10.0.0.5", "fact"),
    ("能帮我记住我用的是 zsh 吗？", "我用的是 zsh", "fact"),
    ("記住：我們用 pnpm", "我們用 pnpm", "fact"),
    ("以后都用中文回答", "以后都用中文回答", "preference"),
    ("另外，从现在开始提交信息用英文。", "从现在开始提交信息用英文。", "preference"),
    ("以后，代码注释写英文", "以后，代码注释写英文", "preference"),
])
def test_requests_are_found_with_their_sentence(prompt, content, kind):
    req = one(prompt)
    assert (req.content, req.kind) == (content, kind)


@pytest.mark.parametrize("prompt", [
    "do you remember when we fixed the login bug?",  # a question about the past
    "Remember that bug from last week? It's back.",  # a question, then a statement
    "remember when we used yarn?",
    "remember to run the tests before you commit",  # a to-do for this conversation, not a memory
    "I remember that we used yarn before",  # the user's own memory
    "it always fails when I run it",  # a description, not a standing instruction
    "Always use pnpm",  # a bare "always" is not taken (see the module docstring)
    "don't remember that",
    "forget that I said that",
    "The README says: remember that the cache is per user.",  # not at the start of the sentence
    "remember: ",  # a cue with nothing after it
    "```\nremember that x is y\n```\nfix the build",  # fenced code
    "> remember that the quoted mail said so\nwhat do you think?",  # a quoted line
    "你还记得上次的 bug 吗？",
    "记住了吗",
    "我记住了",
    "记住了",
    "记得跑测试",  # "remember to": a to-do
    "以后再说吧",  # "later", no instruction
    "以后的版本会支持插件",
    "",
])
def test_no_request(prompt):
    assert find_memory_requests(prompt) == []


def test_several_requests_in_one_prompt_are_kept_in_order_and_bounded():
    prompt = ("Remember that the office is in Lyon. From now on, write tests first. 记住：周五不发布。"
              "Remember that the VPN is required. Remember that builds take 20 minutes.")
    found = find_memory_requests(prompt)
    assert len(found) == MAX_REQUESTS
    assert [r.content for r in found] == ["The office is in Lyon.", "From now on, write tests first.", "周五不发布。"]
    assert [r.kind for r in found] == ["fact", "preference", "fact"]


def test_the_same_request_twice_is_kept_once():
    assert len(find_memory_requests("Remember that X is 42. remember that x is 42.")) == 1


def test_a_pasted_page_is_not_a_request():
    assert find_memory_requests("remember that " + "word " * 400) == []


@pytest.mark.parametrize(("prompt", "content"), [
    ("remember that userId is a bigint in the orders table", "userId is a bigint in the orders table"),
    ("remember that shop-api runs on port 8040", "shop-api runs on port 8040"),
    ("记住 userId 字段在 orders 表里是 bigint", "userId 字段在 orders 表里是 bigint"),
    ("remember that max.poll.records is 200 now", "max.poll.records is 200 now"),
    ("remember that the build uses pnpm", "The build uses pnpm"),
])
def test_an_identifier_at_the_start_keeps_its_case(prompt, content):
    assert one(prompt).content == content


def test_the_cue_is_reported_without_punctuation():
    assert one("Remember, the office is closed Monday.").cue == "Remember"
    assert one("请记住：别在周五发布").cue == "记住"


@pytest.mark.parametrize(("prompt", "content"), [
    ("remember that the build uses pnpm, thank you, please!!", "The build uses pnpm"),
    ("remember that the build uses pnpm ,  ;  :", "The build uses pnpm"),
    ("记住：构建用 pnpm，谢谢。", "构建用 pnpm"),
    ("能帮我记住构建用 pnpm 吗？", "构建用 pnpm"),
    ("remember that thanks-giving is a holiday here", "thanks-giving is a holiday here"),
])
def test_trailing_courtesy_and_punctuation_are_dropped(prompt, content):
    assert one(prompt).content == content


@pytest.mark.parametrize("filler", ["\t", ":", " ,", "，", " thanks", "?"])
def test_long_runs_of_trailing_filler_take_linear_time(filler):
    # Trailing filler repeated 50,000 times, then a word: the trimming must not rescan the
    # run from every position (each case would take minutes if it did).
    prompt = "remember that the build uses pnpm" + filler * 50_000 + "x"
    found = find_memory_requests(prompt)
    assert all(len(r.content) <= len(prompt) for r in found)
    if filler != "?":  # a sentence ending in "?" is a question, not a request
        assert find_memory_requests("remember that the build uses pnpm" + filler * 50_000)[0].content == (
            "The build uses pnpm")


@pytest.mark.parametrize(("prompt", "scope"), [
    ("From now on, answer in English.", "global"),
    ("from now on, call me Sam", "global"),
    ("从现在开始，commit message 一律写英文。", "global"),
    ("Going forward, run pytest -x first.", "global"),  # a tool and its flag hold everywhere
    ("From now on prefer `uv` over pip.", "global"),
    ("From now on, use short names, e.g. i and j.", "global"),  # "e.g." is no identifier
    ("From now on, use Python 3.11 features.", "global"),
    ("from now on set ORDER_RETRY_MAX to 5", "project"),  # an identifier of the project
    ("From now on, put handlers in src/api.", "project"),  # a path
    ("From now on, keep package.json sorted.", "project"),  # a file name
    ("From now on, in this repo use tabs.", "project"),  # the project itself
    ("以后，这个项目都用 pnpm。", "project"),
    ("从现在开始，项目里的日志都用 zap。", "project"),
    ("remember that answers should be short", "project"),  # a fact is the project's, as before
])
def test_a_preference_that_names_nothing_of_the_project_holds_everywhere(prompt, scope):
    (req,) = find_memory_requests(prompt)
    assert req.scope == scope, req
