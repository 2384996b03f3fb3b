"""The fix of a learned failure, read from GitLab's compare of the analysed and the passing commit: the
changed files and a capped diff summary, which become the Resolution's evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hummingbird_agent import budgets


@dataclass(frozen=True, slots=True)
class Fix:
    base: str
    """The analysed (failing) commit."""
    head: str
    """The commit whose jobs pass (or the MR head when a member asked to learn)."""
    files: tuple[str, ...]
    commits: tuple[str, ...]
    """Commit titles, oldest first."""
    summary: str
    more_files: int = 0
    withheld_titles: int = 0
    """Commit titles left out: free text by an MR author below Developer, like the MR's own title."""

    def to_json(self) -> dict[str, Any]:
        return {"commits": f"{self.base[:12]}..{self.head[:12]}", "files": list(self.files),
                "titles": list(self.commits), "diff": self.summary}


def _path(diff: Mapping[str, Any]) -> str:
    new, old = str(diff.get("new_path") or ""), str(diff.get("old_path") or "")
    if diff.get("deleted_file"):
        return f"{old} (deleted)"
    if diff.get("new_file"):
        return f"{new} (new)"
    return f"{new} (renamed from {old})" if diff.get("renamed_file") and old != new else new


def _changed_lines(text: str) -> Iterable[str]:
    for line in text.splitlines():
        if line.startswith(("@@", "+", "-")) and not line.startswith(("+++", "---")):
            yield line


def diff_summary(diffs: Iterable[Mapping[str, Any]]) -> str:
    """Each file's path and its first changed lines (hunk headers, + and -), cut to the summary budget."""
    parts: list[str] = []
    size = 0
    for diff in diffs:
        lines = list(_changed_lines(str(diff.get("diff") or "")))
        shown = lines[: budgets.BAMBOO_FIX_FILE_DIFF_LINES]
        if len(lines) > len(shown):
            shown.append(f"[... {len(lines) - len(shown)} more changed lines]")
        block = "\n".join([f"--- {_path(diff)}", *shown])
        if size + len(block) > budgets.BAMBOO_FIX_SUMMARY_CHARS:
            parts.append("[... more changes cut]")
            break
        parts.append(block)
        size += len(block) + 1
    return "\n".join(parts)


def read_fix(compare: Mapping[str, Any], base: str, head: str, *, titles_trusted: bool) -> Fix:
    """The fix; commit titles only when `titles_trusted` (the MR's author is Developer+): the diff is the code
    under analysis, but a title is free text that would reach the extraction model."""
    diffs = [d for d in compare.get("diffs") or [] if isinstance(d, Mapping)]
    files = tuple(_path(d) for d in diffs)
    titles = tuple(str(c.get("title") or "") for c in compare.get("commits") or [] if isinstance(c, Mapping))
    cap = budgets.BAMBOO_FIX_MAX_FILES
    shown = titles[:cap] if titles_trusted else ()
    return Fix(base, head, files[:cap], shown, diff_summary(diffs), max(0, len(files) - cap),
               0 if titles_trusted else len(titles))


def fix_section(fix: Fix | None, verified: bool, same_commit: bool) -> str:
    """The incident text's account of the outcome and, when it was read, of the fix."""
    if same_commit:
        return ("## Outcome\nThe same commit passed when the jobs ran again: no code changed, so the failure "
                "was intermittent (flaky) or fixed outside the repository.")
    head = "## Outcome and fix\nA later pipeline of this merge request passed" if verified else (
        "## Changes since the analysed commit\nNot yet confirmed by a passing pipeline")
    if fix is None:
        return f"{head}; the changes could not be read."
    files = ", ".join(fix.files) + (f" and {fix.more_files} more" if fix.more_files else "")
    lines = [f"{head}. Changes from {fix.base[:12]} to {fix.head[:12]}: {files or 'no file changed'}."]
    if fix.commits:
        lines.append("Commits: " + "; ".join(fix.commits))
    if fix.withheld_titles:
        lines.append(f"Commits: {fix.withheld_titles}, titles withheld (the MR's author is below Developer).")
    if fix.summary:
        lines += ["```diff", fix.summary, "```"]
    return "\n".join(lines)
