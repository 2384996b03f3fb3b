"""The benchmarks' fairness rules: the scripted naming model decides reuse from the names it is shown and its
own wording (never from the hidden label), the two-signal baseline's weight for a fold comes from the other
folds only, and the streamed Tekton runs are shaped like real ones (no padding string)."""

from __future__ import annotations

import json

from bench.bamboo_baselines import WEIGHTS, choose_weights, two_signal
from bench.bamboo_naming import NamingModel, reuse, variants
from bench.tekton_runs import item_bytes, page


def extraction_prompt(repo: str, category: int, shown: list[str], discussion: str = "fixed it") -> str:
    existing = "\n".join(f"- {name}" for name in shown)
    said = json.dumps([repo, category])
    return (f"## Facts extracted by code\n- Task_Feature: project={repo}\n\n## Existing causes\n{existing}\n\n"
            f"## Discussion and fix\nCause: {said}\n\n{discussion}\n\n## Log excerpts\nerror\n")


def test_a_shown_name_in_other_words_of_the_same_cause_is_not_reused() -> None:
    synonym = variants("acme/app", 3)[4]  # "acme/app build error, class 3": no shared wording with the others
    assert reuse(variants("acme/app", 3)[0], [synonym]) is None


def test_a_shown_name_in_the_same_words_is_reused_whatever_its_label() -> None:
    own = variants("acme/app", 3)[0]
    assert reuse(own, ["ACME/APP Failure Category 3.", "acme/app failure category 4"]) == "ACME/APP Failure Category 3."
    assert reuse(own, ["acme/app failure category 4"]) is None  # one number apart: another cause


def test_the_model_names_from_the_discussion_and_reuses_only_what_it_recognises() -> None:
    model = NamingModel()
    family = variants("acme/app", 3)
    alone = model.name(extraction_prompt("acme/app", 3, []))
    assert alone in family
    recognised = [name for name in family if reuse(alone, [name])]
    assert model.name(extraction_prompt("acme/app", 3, recognised[-1:])) == recognised[-1]
    strangers = [name for name in family if name != alone and reuse(alone, [name]) is None]
    assert model.name(extraction_prompt("acme/app", 3, strangers)) == alone


def test_a_folds_two_signal_weight_is_chosen_without_its_own_figures() -> None:
    best_at = {0: 3.0, 1: 0.5, 2: 0.5, 3: 0.5}
    top1 = [{w: 0.9 if w == best_at[fold] else 0.6 for w in WEIGHTS} for fold in range(4)]
    assert choose_weights(top1) == [0.5, 0.5, 0.5, 0.5]


def test_two_signal_ranks_by_excerpt_plus_weighted_whole_log() -> None:
    excerpt, whole = {"a": 0.5, "b": 0.4}, {"a": 0.1, "b": 0.3}
    assert two_signal(excerpt, whole, 0.0) == ["a", "b"]
    assert two_signal(excerpt, whole, 1.0) == ["b", "a"]


def test_streamed_runs_are_distinct_nested_and_unpadded() -> None:
    for kind in ("pipelineruns", "taskruns"):
        items = json.loads(b"".join(page(kind, 3)()))["items"]
        assert len({item["metadata"]["uid"] for item in items}) == 3
        assert items[0]["status"]["conditions"][0]["status"] == "False"
        assert items[0]["metadata"]["annotations"] and items[0]["status"]["results"]

        def longest(value: object) -> int:
            if isinstance(value, dict):
                return max((longest(v) for v in value.values()), default=0)
            if isinstance(value, list):
                return max((longest(v) for v in value), default=0)
            return len(str(value))

        assert longest(items[0]) < 200, "no field may be padding"
        assert item_bytes(kind) > 8000
