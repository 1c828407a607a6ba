"""A user's own project, as nox's user_project session runs it: omnisync[all] and pytest, no vcrpy.

omnisync registers a pytest plugin for every install; it must not break this project's tests.
"""

import importlib.util

import pytest

from omnisync import MemoryRouter
from omnisync.messages import Message
from omnisync.errors import MissingDependencyError


def test_vcrpy_is_really_absent_here():
    assert importlib.util.find_spec("vcr") is None


def test_the_users_own_code_runs_with_the_plugin_loaded(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("omnisync")
    store = MemoryRouter("in_memory").store
    store.append("assistant", "s1", [Message(role="user", content="hello")])
    assert [m.content for m in store.latest("assistant", "s1", limit=10)] == ["hello"]


def test_a_cassette_names_the_extra_to_install(omnisync_cassette):
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnisync\[cassettes\]'"):
        with omnisync_cassette("anything"):
            pass
