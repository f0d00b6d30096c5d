"""Workspaces come from the command line only: NAME=PATH, a folder's name, or --root."""

from __future__ import annotations

import shutil

import pytest
from server_support import serve_args

from rhizome.core.errors import ConfigurationError
from rhizome.server.workspaces import Workspaces, collect, parse_spec


def test_a_workspace_is_named_after_its_folder_or_given_a_name(tmp_path):
    assert parse_spec(str(tmp_path / "my-index")).name == "my-index"
    spec = parse_spec(f"docs={tmp_path / 'my-index'}")
    assert (spec.name, spec.location) == ("docs", tmp_path / "my-index")
    assert parse_spec("postgresql://me@db/rag?schema=papers").name == "papers"
    assert parse_spec("docs=postgresql://me@db/rag?schema=papers").location == "postgresql://me@db/rag?schema=papers"


@pytest.mark.parametrize("given", ["/tmp/.hidden", "jobs=/tmp/x", "v1=/tmp/x", "/tmp/with space", "/tmp/" + "x" * 65])
def test_names_the_routes_need_or_that_are_no_name_are_refused(given):
    with pytest.raises(ConfigurationError, match="NAME=PATH"):
        parse_spec(given)


def test_two_indexes_of_one_name_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="two indexes are named 'idx'"):
        collect([str(tmp_path / "a" / "idx"), str(tmp_path / "b" / "idx")], None)
    assert [s.name for s in collect([str(tmp_path / "a" / "idx"), f"other={tmp_path / 'b' / 'idx'}"], None)] == ["idx", "other"]


def test_root_serves_every_index_folder_under_it(built, tmp_path):
    shutil.copytree(built("naive"), tmp_path / "alpha")
    shutil.copytree(built("lightrag"), tmp_path / "beta")
    (tmp_path / "not-an-index").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    specs = collect([], tmp_path)
    assert [s.name for s in specs] == ["alpha", "beta"]
    workspaces = Workspaces.open(specs, serve_args())
    try:
        assert {w.name: w.index.method for w in workspaces} == {"alpha": "naive", "beta": "lightrag"}
    finally:
        workspaces.close()


def test_nothing_to_serve_says_what_to_give(tmp_path):
    with pytest.raises(ConfigurationError, match="no index to serve"):
        collect([], None)
    with pytest.raises(ConfigurationError, match="no index to serve"):
        collect([], tmp_path)
    with pytest.raises(ConfigurationError, match="is not a folder"):
        collect([], tmp_path / "missing")


def test_an_index_that_cannot_be_opened_closes_those_opened(built, tmp_path):
    from rhizome.core.errors import IndexNotFoundError

    shutil.copytree(built("naive"), tmp_path / "good")
    with pytest.raises(IndexNotFoundError):
        Workspaces.open(collect([str(tmp_path / "good"), str(tmp_path / "missing")], None), serve_args())
    reopened = Workspaces.open(collect([str(tmp_path / "good")], None), serve_args())  # its writer lock was let go
    reopened.close()
