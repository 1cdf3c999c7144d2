"""A poller for some Moods: ``--moods`` / ``--exclude-moods`` split one store between
pollers, and ``status`` says which poller serves which Mood.

Here, the pure part (no database, no process); the rest sits under the same name
in the other layers.
"""

from __future__ import annotations


import pytest

from poller import errors
from poller.scope import Scope
from support.scope import split  # noqa: F401  (fixtures)


@pytest.mark.parametrize("only,without,lobby,attic,described", [
    (None, None, True, True, "all"),
    ("lobby", None, True, False, "lobby"),
    ("attic, lobby", None, True, True, "attic,lobby"),
    (None, "lobby", False, True, "all but lobby"),
])
def test_a_scope_serves_what_it_names_and_reads_back_from_its_description(
        only, without, lobby, attic, described):
    scope = Scope.parse(only, without)
    assert (scope.serves("lobby"), scope.serves("attic")) == (lobby, attic)
    assert scope.describe() == described
    assert Scope.from_description(described) == scope
    name = scope.lease_name("poller")
    assert len(name) <= 32 and (name == "poller") == scope.everything


@pytest.mark.parametrize("only,without,message", [
    ("lobby", "attic", "not both"),
    (" , ", None, "--moods needs at least one"),
    (None, "", "--exclude-moods needs at least one"),
])
def test_a_scope_refuses_what_it_cannot_mean(only, without, message):
    with pytest.raises(errors.UserError, match=message):
        Scope.parse(only, without)


