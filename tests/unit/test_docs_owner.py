"""Registry keys of documents indexed for one user alone (memvault.service.documents.owner), and how the page names them.

The end-to-end case (two users over HTTP) is in tests/process/test_http.py.
"""

from __future__ import annotations

from memvault.service.browse import DocCollection
from memvault.service.documents.owner import owned_key, read_keys, split_key
from memvault.web import pages


def test_an_owned_key_names_its_project_and_user_and_no_plain_project_is_one() -> None:
    for project in ("", "github.com/acme/shop", "local:api-0123456789ab"):
        key = owned_key(project, "alice")
        assert split_key(key) == (project, "alice") and split_key(project) == (project, None)
        assert key != owned_key(project, "bob") and key not in (project, "alice")
    assert read_keys(["github.com/acme/shop", ""], "bob") == [
        "github.com/acme/shop", owned_key("github.com/acme/shop", "bob"), "", owned_key("", "bob")]


def test_the_page_lists_a_users_own_collection_as_theirs() -> None:
    items = [DocCollection(project=owned_key("", "alice"), collection="notes", files=1, chunks=2, last_indexed_at=0.0),
             DocCollection(project="p1", collection="handbook", files=3, chunks=9, last_indexed_at=0.0)]
    html = pages.docs("/s", items, [], {"p1": "shop"})
    assert "global (only alice)" in html and "shop" in html and "\x1f" not in html
