"""The matching decisions, pure: which topics are matched against what, and how memberships
change as the matches arrive."""

from __future__ import annotations

from feeds.match.membership import Changes, plan


def test_a_new_or_edited_topic_is_matched_against_the_history() -> None:
    todo = plan({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "old", "gone": "9"},
                papers_waiting=True)  # fmt: skip
    assert todo.drop == ("gone",)
    assert todo.groups == ((("b", "c"), False), (("a",), True))
    assert todo.record == ("b", "c")


def test_steady_topics_wait_for_new_papers() -> None:
    todo = plan({"a": "1"}, {"a": "1"}, papers_waiting=False)
    assert todo.groups == ()
    assert todo.drop == ()
    assert plan({"a": "1"}, {"a": "1"}, papers_waiting=True).groups == ((("a",), True),)


def test_memberships_enter_stay_and_go() -> None:
    changes = Changes({("t", "p1"), ("t", "p2"), ("u", "p1")})
    enter, stay = changes.of("p1", 7, [("t", '[["x","title"]]'), ("v", "[]")])
    assert enter == [("v", "p1", 7, "[]")]
    assert stay == [("t", '[["x","title"]]')]
    enter, stay = changes.of("p3", 9, [("t", "[]")])
    assert enter == [("t", "p3", 9, "[]")]
    assert stay == []
    assert changes.gone() == {("t", "p2"), ("u", "p1")}
