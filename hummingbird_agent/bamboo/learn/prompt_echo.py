"""Names a model copied from our prompts instead of the sources: a placeholder or example of the answer
template, or a run of the prompts' own words. The phrases are read from the prompt files themselves, so an
edited prompt keeps the guard true; a small model copies them on every incident, and one such name stored
would become one "cause" shared by unrelated incidents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.incident_graph import Edge, KnowledgeGraph, Node, NodeType
from hummingbird_agent.bamboo.prompts import load_prompt

# The extraction prompts (what the model sees) and the reviewer's, whose quoted examples ("error", "build
# failed") are the names it calls too vague to be useful again.
PROMPTS = ("extract_system", "extract_user", "review_system")
# The prompts holding the answer template, whose placeholder values are never part of a name.
TEMPLATES = ("extract_system", "extract_user")
# Node types whose names the model writes; Symptoms and Task_Features are named by code.
NAMED_BY_MODEL = frozenset({NodeType.CAUSE, NodeType.RESOLUTION, NodeType.PROCEDURE, NodeType.COMPONENT,
                            NodeType.ENVIRONMENT, NodeType.TASK_CONTEXT})
_QUOTED = re.compile(r'"([^"\n]*)"')
_PLACEHOLDER = re.compile(r"\$\w+")
_WORD = re.compile(r"[^\W_]+")
_ISSUE = ("{kind} name {name} is text of the prompt (a placeholder, an example or its own words), not a name from "
          "the sources: name it from the sources or leave it out")


def words(text: str) -> tuple[str, ...]:
    """The words of a text, lower case: case, punctuation and spacing never make a phrase different."""
    return tuple(_WORD.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class PromptPhrases:
    """What the prompts say: their quoted strings (template placeholders, examples, keys) and their text."""

    quoted: frozenset[tuple[str, ...]]
    text: str
    """Every prompt's words, space-separated and space-framed, for whole-word run lookups."""
    placeholders: frozenset[str] = frozenset()
    """The answer template's quoted values of two or more words ("short label"), space-framed: never part of a name."""

    @classmethod
    def of(cls, texts: Sequence[str], templates: Sequence[str] = ()) -> PromptPhrases:
        quoted = frozenset(w for t in texts for q in _QUOTED.findall(t) if (w := words(q)))
        runs = " ".join(" ".join(words(_PLACEHOLDER.sub(" ", t))) for t in texts)
        # Values with a space, not keys (keys are written with underscores).
        held = frozenset(f" {' '.join(words(q))} " for t in templates for q in _QUOTED.findall(t)
                         if " " in q.strip() and len(words(q)) >= 2)
        return cls(quoted, f" {runs} ", held)

    def _contains_prompt_text(self, run: tuple[str, ...]) -> bool:
        framed = f" {' '.join(run)} "
        if any(held in framed for held in self.placeholders):
            return True
        size = budgets.BAMBOO_PROMPT_ECHO_CONTAINED_WORDS
        return any(f" {' '.join(run[i:i + size])} " in self.text for i in range(len(run) - size + 1))

    def _is_phrase(self, run: tuple[str, ...]) -> bool:
        if run in self.quoted:
            return True
        return len(run) >= budgets.BAMBOO_PROMPT_ECHO_MIN_WORDS and f" {' '.join(run)} " in self.text

    def echoed(self, name: str) -> bool:
        """True when `name` has no word of its own, or is made only of prompt phrases (one, or several in a
        row): a placeholder or example in quotes, or a run of at least BAMBOO_PROMPT_ECHO_MIN_WORDS prompt words;
        or when it contains a quoted placeholder of two or more words or BAMBOO_PROMPT_ECHO_CONTAINED_WORDS
        consecutive prompt words."""
        run = words(name)
        if self._contains_prompt_text(run):
            return True
        covered = [True] + [False] * len(run)  # covered[i]: run[:i] is a sequence of prompt phrases
        for end in range(1, len(run) + 1):
            covered[end] = any(covered[start] and self._is_phrase(run[start:end]) for start in range(end))
        return covered[-1]


def prompt_phrases() -> PromptPhrases:
    """The phrases of the prompt files as they are now (read on each call: a prompt is a few KB), and of the
    feedback this guard gives the re-extraction (a model may copy that too)."""
    feedback = _ISSUE.format(kind="", name="")
    return PromptPhrases.of([*(load_prompt(name) for name in PROMPTS), feedback],
                            [load_prompt(name) for name in TEMPLATES])


def echoed_nodes(graph: KnowledgeGraph, phrases: PromptPhrases | None = None) -> list[Node]:
    """The model-named nodes of `graph` whose name the prompts supplied."""
    phrases = phrases or prompt_phrases()
    return [n for n in graph.nodes if n.type in NAMED_BY_MODEL and phrases.echoed(n.name)]


def echo_issue(node: Node) -> str:
    """The reviewer's rejection of one such name, worded for the re-extraction."""
    return _ISSUE.format(kind=node.type.value, name=repr(node.name))


def without_echoes(graph: KnowledgeGraph) -> tuple[KnowledgeGraph, list[Node]]:
    """`graph` without the nodes the prompts named and their edges (never store a name the prompt supplied)."""
    dropped = echoed_nodes(graph)
    if not dropped:
        return graph, []
    gone = {n.key for n in dropped}
    edges: tuple[Edge, ...] = tuple(e for e in graph.edges if e.source not in gone and e.target not in gone)
    return KnowledgeGraph(tuple(n for n in graph.nodes if n.key not in gone), edges), dropped
