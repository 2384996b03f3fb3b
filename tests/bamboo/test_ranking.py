"""Candidate ranking: clues weighted by specificity, stored symptoms found anywhere in the excerpt, and a
symptom for every incident even when its log has no strong error line."""

from __future__ import annotations

from hummingbird_agent.bamboo.analysis import PastIncident
from hummingbird_agent.bamboo.incident_graph import NodeType
from hummingbird_agent.bamboo.retrieval.evidence import GraphIndex
from hummingbird_agent.bamboo.stores.base import NodeRow
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps
from hummingbird_agent.bamboo.strategies.gitlab_ci import GitLabCIStrategy
from tests.bamboo.fakes import uncalled_llm

SIZE_LOG = ("\x1b[31mPackage size limit has exceeded by 934 B\x1b[39m\n  Package size: 103.91 KB\n"
            "  Size limit:   103 KB\n")


def cause(name: str, frequency: int = 1) -> NodeRow:
    return NodeRow("Cause", name, "", tuple(f"{name}#{i}" for i in range(frequency)), frequency, 1.0, {})


def index(links: dict[tuple[str, str], tuple[str, ...]], causes: list[NodeRow]) -> GraphIndex:
    return GraphIndex({c.name: c for c in causes}, links, {}, {}, {}, {})


def strategy() -> GitLabCIStrategy:
    return GitLabCIStrategy(StrategyDeps(uncalled_llm()))


def test_a_log_without_a_strong_error_line_still_gives_its_headline_as_symptom() -> None:
    facts, _ = strategy().facts(IncidentInput("", {"project": "g/app"}, task_logs={"build": SIZE_LOG}))
    [symptom] = [n for n in facts if n.type is NodeType.SYMPTOM]
    assert symptom.name == "Package size limit has exceeded by <SIZE>"


def test_a_stated_error_message_wins_over_a_weak_log_line() -> None:
    task = {"project": "g/app", "error": "quota exceeded for bucket 12"}
    facts, _ = strategy().facts(IncidentInput("", task, task_logs={"build": SIZE_LOG}))
    assert [n.description for n in facts if n.type is NodeType.SYMPTOM] == ["quota exceeded for bucket 12"]


def test_a_symptom_many_causes_share_ranks_below_the_projects_own_cause() -> None:
    # "rake aborted!" indicates three causes of other projects; the project's feature reaches two.
    # Counting clue types alone ties them all and frequency would put "other a" first.
    causes = [cause("other a", 5), cause("other b"), cause("other c"), cause("own x"), cause("own y")]
    links = {("symptom", "rake aborted!"): ("other a", "other b", "other c"),
             ("task_feature", "project=g/app"): ("own x", "own y")}
    ranked = index(links, causes).rank({"symptom": ("rake aborted!",), "task_feature": ("project=g/app",)}, ())
    assert [c.name for c in ranked[:2]] == ["own x", "own y"]
    assert ranked[2].name == "other a"


def test_more_clue_types_still_beat_one_specific_clue() -> None:
    causes = [cause("both"), cause("one")]
    links = {("symptom", "E timeout"): ("both", "one"), ("task_feature", "project=g/app"): ("both",),
             ("symptom", "npm ERR! code E404"): ("one",)}
    clues = {"symptom": ("E timeout", "npm ERR! code E404"), "task_feature": ("project=g/app",)}
    assert [c.name for c in index(links, causes).rank(clues, ())] == ["both", "one"]


def test_stored_symptoms_are_found_on_any_line_with_volatile_tokens_masked() -> None:
    links = {("symptom", "Package size limit has exceeded by <SIZE>"): ("size",),
             ("task_feature", "job=build"): ("size",)}
    text = "error: a\nerror: b\nerror: c\nPackage size limit has exceeded by 12 KB\n"
    found = index(links, [cause("size")]).known_symptoms([text])
    assert found == ("Package size limit has exceeded by <SIZE>",)


def test_every_incident_above_the_similar_bar_counts_not_only_the_listed_ones() -> None:
    # Five near-identical incidents of one cause fill the similar-incidents list; the project's own
    # cause is similar too (0.9) and also shares the specific symptom, so it must rank first.
    causes = [cause("other", 5), cause("own")]
    links = {("symptom", "rake aborted!"): ("other",), ("symptom", "No Rakefile found"): ("own",),
             ("task_feature", "project=g/app"): ("own",)}
    listed = tuple(PastIncident(f"other#{i}", 1.0, "", "Summary") for i in range(5))
    clues = {"symptom": ("rake aborted!", "No Rakefile found"), "task_feature": ("project=g/app",)}
    ranked = index(links, causes).rank(clues, listed, {"own#0": (0.9, "Summary")})
    assert [c.name for c in ranked] == ["own", "other"]
    assert "similar_incident" in ranked[0].clue_types


def test_a_failure_without_a_log_is_not_scored_down_for_having_no_whole_log_to_compare() -> None:
    causes = [cause("own")]
    links = {("task_feature", "project=g/app"): ("own",), ("symptom", "E timeout"): ("own",)}
    clues = {"symptom": ("E timeout",), "task_feature": ("project=g/app",)}
    without = index(links, causes).rank(clues, (), logs={})[0].score
    unlike = index(links, causes).rank(clues, (), logs={"other#0": 0.9})[0].score
    alike = index(links, causes).rank(clues, (), logs={"own#0": 0.9})[0].score
    assert unlike < without < alike
