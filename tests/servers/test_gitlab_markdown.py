"""The fake GitLab's quick-action reader agrees with GitLab's own regular expression (ported as written, too slow
for long notes, so kept here as the reference) on every short text hypothesis builds of the pieces that matter."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.servers.gitlab_markdown import COMMANDS, quick_actions

# Gitlab::QuickActions::Extractor#commands_regex; Ruby's `^`/`$` are line anchors and its /m is DOTALL.
_GITLAB = re.compile(r"""
      (?P<code> ^```.+?\n```$ )
    | (?P<inline_code> ^.*`\n*.+?\n*`$ )
    | (?P<html> ^<[^>]+?>\n.+?\n</[^>]+?>$ )
    | (?P<quote> ^>>>.+?\n>>>$ )
    | (?: ^/(?P<cmd>""" + "|".join(re.escape(n) for n in sorted(COMMANDS, key=len, reverse=True)) + r""")
          (?:[ ](?P<arg>[^\n]*))?(?:\s*\n|$) )
""", re.MULTILINE | re.DOTALL | re.IGNORECASE | re.VERBOSE)


def _by_regex(body: str) -> tuple[str, list[tuple[str, str]]]:
    found: list[tuple[str, str]] = []

    def take(match: re.Match[str]) -> str:
        if match.group("cmd") is None:
            return match.group(0)
        found.append((match.group("cmd").lower(), (match.group("arg") or "").strip()))
        return ""

    return _GITLAB.sub(take, body.replace("\r", "")).rstrip(), found


PIECES = ["/close", "/label ~x", "/merge now", "/closed", "```", "````", "`", "a `b`", "x`", "<details>",
          "</details>", "<b>", "<>", "</>", "</a", "<a\nb>", ">>>", ">>>>", "text", "", " /close", "/approve  ", "\r"]


@settings(max_examples=400)
@given(st.lists(st.sampled_from(PIECES), max_size=10))
def test_the_reader_runs_what_gitlabs_expression_runs(lines: list[str]) -> None:
    body = "\n".join(lines)
    assert quick_actions(body) == _by_regex(body)
