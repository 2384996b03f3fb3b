"""The fake GitLab's issues (create, list with GitLab's filters, edit, close, reopen, comment) and the merge requests
that contain a commit, answered and refused as GitLab does (lib/api/issues.rb, lib/api/commits.rb)."""

from __future__ import annotations

from typing import Any

from tests.servers.base import HTTPError, Request, Response, json_response

_P = r"/api/v4/projects/(?P<pid>[^/]+)"
_ISSUE = _P + r"/issues/(?P<iid>\d+)"
# Fields of Entities::MergeRequest that MergeRequestBasic, the list entity, does not render.
_MR_DETAIL_ONLY = ("subscribed", "changes_count", "latest_build_started_at", "latest_build_finished_at",
                   "first_deployed_to_production_at", "pipeline", "head_pipeline", "diff_refs", "merge_error",
                   "first_contribution", "user")
_MR_STATES = ("opened", "closed", "merged", "locked", "all")
# Issue fields PUT may change (the `at_least_one_of` of lib/api/issues.rb, those the fake keeps).
_EDITABLE = ("title", "description", "labels", "add_labels", "remove_labels", "state_event", "confidential")
# A search word shorter than this matches nothing partially (Gitlab::SQL::Pattern::MIN_CHARS_FOR_PARTIAL_MATCHING).
_MIN_SEARCH_CHARS = 3


def _missing(name: str) -> Response:
    """Grape's answer to a missing or invalid parameter: {"error": "<name> is missing"} with 400."""
    return json_response({"error": name}, 400)


def _labels(value: Any) -> list[str]:
    """A comma-separated label list (or a JSON array) as GitLab stores it: trimmed, unique, sorted by title."""
    items = value if isinstance(value, list) else str(value or "").split(",")
    return sorted({str(item).strip() for item in items if str(item).strip()})


def _matches(text: str | None, query: str) -> bool:
    """Gitlab::SQL::Pattern#fuzzy_arel_match on one column: every word of 3+ characters appears (any case); a query
    without such a word must equal the column."""
    words = [w.lower() for w in query.split() if len(w) >= _MIN_SEARCH_CHARS]
    value = (text or "").lower()
    return all(w in value for w in words) if words else value == query.lower()


def _label_filter(issue: dict[str, Any], wanted: str | None) -> bool:
    """IssuableFinder's `labels`: every named label (None: issues without labels, Any: with at least one)."""
    if wanted is None:
        return True
    if wanted.lower() in ("none", "any"):
        return bool(issue["labels"]) == (wanted.lower() == "any")
    return set(_labels(wanted)) <= set(issue["labels"])


class GitLabIssues:
    """Issues per (project, iid) and the commits each MR contains; mixed into GitLabServer (which provides
    project(), paginate(), caller(), read_written(), route(), users, merge_requests, pipelines, statuses, now()
    and next_id())."""

    issues: dict[tuple[int, int], dict[str, Any]]
    issue_notes: dict[tuple[int, int], list[dict[str, Any]]]
    mr_commits: dict[tuple[int, int], list[str]]
    merge_requests: dict[tuple[int, int], dict[str, Any]]
    pipelines: dict[tuple[int, int], dict[str, Any]]
    statuses: dict[tuple[int, str], list[dict[str, Any]]]
    users: dict[int, dict[str, Any]]
    route: Any
    project: Any
    paginate: Any
    caller: Any
    read_written: Any
    now: Any
    next_id: Any

    def init_issues(self) -> None:
        self.issues, self.issue_notes, self.mr_commits = {}, {}, {}
        self.history: dict[int, list[dict[str, Any]]] = {}

    # --- a linear history of the default branch, for compare ------------------------------------
    def add_branch_commit(self, project_id: int, sha: str, *, title: str = "Change", author_name: str = "Dev",
                          created_at: str | None = None) -> dict[str, Any]:
        """A commit at the tip of the project's branch history (its parent is the previous tip): what GET
        /repository/compare lists between two of them when no compare was registered for the pair."""
        commits = self.history.setdefault(project_id, [])
        parents = [commits[-1]["id"]] if commits else []
        commit = {"id": sha, "short_id": sha[:8], "title": title, "message": title, "author_name": author_name,
                  "author_email": f"{author_name.lower()}@example.com", "created_at": created_at or self.now(),
                  "parent_ids": parents, "web_url": f"{self.project(project_id)['web_url']}/-/commit/{sha}"}
        commits.append(commit)
        return commit

    def compare_history(self, project_id: int, from_sha: str, to_sha: str) -> dict[str, Any] | None:
        """Compare of two commits of the branch history (`from` older): the commits after `from` up to `to`, oldest
        first, as Gitlab::Git::Compare lists them; None when either is not in it."""
        shas = [c["id"] for c in self.history.get(project_id, [])]
        if from_sha not in shas or to_sha not in shas or shas.index(from_sha) > shas.index(to_sha):
            return None
        commits = self.history[project_id][shas.index(from_sha) + 1: shas.index(to_sha) + 1]
        web = self.project(project_id)["web_url"]
        return {"commit": commits[-1] if commits else None, "commits": commits, "diffs": [], "compare_timeout": False,
                "compare_same_ref": from_sha == to_sha, "web_url": f"{web}/-/compare/{from_sha}...{to_sha}"}

    def register_issue_routes(self) -> None:
        r = self.route
        r("GET", _P + r"/repository/commits/(?P<sha>[^/]+)/merge_requests", self._commit_mrs)
        r("GET", _P + r"/issues", self._issue_list)
        r("POST", _P + r"/issues", self._create_issue)
        r("GET", _ISSUE, lambda req, pid, iid: json_response(self.issue(pid, iid)))
        r("PUT", _ISSUE, self._edit_issue)
        r("GET", _ISSUE + r"/notes", lambda req, pid, iid: self.paginate(req, self._notes_of(pid, iid)))
        r("POST", _ISSUE + r"/notes", self._comment)

    # --- merge requests of a commit -------------------------------------------------------------
    def add_mr_commits(self, project_id: int, iid: int, shas: list[str]) -> None:
        """The commits of MR !iid (its diff's commits); its head sha and merge commit count without this."""
        self.mr_commits[(project_id, iid)] = list(shas)

    def _known_commit(self, project_id: int, sha: str) -> bool:
        mrs = [m for (p, _), m in self.merge_requests.items() if p == project_id]
        known = {c for (p, _), shas in self.mr_commits.items() if p == project_id for c in shas}
        known |= {m.get(k) for m in mrs for k in ("sha", "merge_commit_sha", "squash_commit_sha")}
        known |= {p["sha"] for (proj, _), p in self.pipelines.items() if proj == project_id}
        known |= {s for (p, s) in self.statuses if p == project_id}
        known |= {c["id"] for c in self.history.get(project_id, [])}
        return sha in known

    def _commit_mrs(self, req: Request, pid: str, sha: str) -> Response:
        """GET /repository/commits/:sha/merge_requests (lib/api/commits.rb): the project's MRs that contain the commit
        (MergeRequestsFinder with commit_sha: its diff's commits, or its merge or squash commit), newest first, as
        MergeRequestBasic; an unknown commit is `404 Commit Not Found`."""
        project_id = self.project(pid)["id"]
        if not self._known_commit(project_id, sha):
            raise HTTPError(404, "Commit Not Found")
        state = req.arg("state", "all")
        if state not in _MR_STATES:
            return _missing("state does not have a valid value")
        found = [m for (p, iid), m in self.merge_requests.items() if p == project_id and state in ("all", m["state"])
                 and sha in {m["sha"], m.get("merge_commit_sha"), m.get("squash_commit_sha"),
                             *self.mr_commits.get((p, iid), [])}]
        found.sort(key=lambda m: (m["created_at"], m["id"]), reverse=True)
        return self.paginate(req, [{k: v for k, v in m.items() if k not in _MR_DETAIL_ONLY} for m in found])

    # --- issues -------------------------------------------------------------------------------
    def issue(self, pid: str, iid: str | int) -> dict[str, Any]:
        found = self.issues.get((self.project(pid)["id"], int(iid)))
        if found is None:
            raise HTTPError(404, "Not found")  # `find_by!` of lib/api/issues.rb: RecordNotFound
        return found

    def add_issue(self, project_id: int, title: str, *, description: str = "", labels: list[str] | None = None,
                  author_id: int = 2, state: str = "opened") -> dict[str, Any]:
        """An issue as Entities::Issue renders it; its iid is the project's next one."""
        iid = 1 + max((i for p, i in self.issues if p == project_id), default=0)
        stamp, web = self.now(), self.project(project_id)["web_url"]
        author = {k: self.users[author_id].get(k) for k in ("id", "username", "name", "state", "avatar_url",
                                                               "web_url")} if author_id in self.users else None
        issue = {"id": self.next_id(), "iid": iid, "project_id": project_id, "title": title,
                 "description": description, "state": state, "created_at": stamp, "updated_at": stamp,
                 "closed_at": None, "closed_by": None, "labels": _labels(labels or []), "milestone": None,
                 "assignees": [], "assignee": None, "author": author, "type": "ISSUE", "issue_type": "issue",
                 "user_notes_count": 0, "merge_requests_count": 0, "upvotes": 0, "downvotes": 0, "due_date": None,
                 "confidential": False, "discussion_locked": None, "web_url": f"{web}/-/issues/{iid}",
                 "references": {"short": f"#{iid}", "relative": f"#{iid}",
                                "full": f"{self.project(project_id)['path_with_namespace']}#{iid}"}}
        self.issues[(project_id, iid)] = issue
        return issue

    def _create_issue(self, req: Request, pid: str) -> Response:
        if not req.arg("title"):
            return _missing("title is missing")
        title = self.read_written(req, "issue title", req.arg("title"), commands=False)
        description = self.read_written(req, "issue", req.arg("description") or "")
        issue = self.add_issue(self.project(pid)["id"], title, description=description,
                               labels=_labels(req.arg("labels")), author_id=self.caller(req))
        return json_response(issue, 201)

    def _issue_list(self, req: Request, pid: str) -> Response:
        """GET /projects/:id/issues with IssuesFinder's `state`, `labels` and `search` (title or description),
        newest first by default (`order_by` created_at or updated_at, `sort`)."""
        project_id, state = self.project(pid)["id"], req.arg("state", "all")
        if state not in ("opened", "closed", "all"):
            return _missing("state does not have a valid value")
        search, key = req.arg("search"), req.arg("order_by", "created_at")
        if key not in ("created_at", "updated_at"):
            return _missing("order_by does not have a valid value")
        found = [i for (p, _), i in self.issues.items() if p == project_id and state in ("all", i["state"])
                 and _label_filter(i, req.arg("labels"))
                 and (not search or _matches(i["title"], search) or _matches(i["description"], search))]
        found.sort(key=lambda i: (i[key], i["id"]), reverse=req.arg("sort", "desc") != "asc")
        return self.paginate(req, found)

    def _edit_issue(self, req: Request, pid: str, iid: str) -> Response:
        issue = self.issue(pid, iid)
        if not any(req.arg(k) is not None for k in _EDITABLE):
            return _missing(", ".join(_EDITABLE) + " are missing, at least one parameter must be provided")
        event = req.arg("state_event")
        if event not in (None, "close", "reopen"):
            return _missing("state_event does not have a valid value")
        if req.arg("title") is not None:
            issue["title"] = self.read_written(req, f"#{iid} title", req.arg("title"), commands=False)
        if req.arg("description") is not None:
            issue["description"] = self.read_written(req, f"#{iid}", req.arg("description"))
        if req.arg("confidential") is not None:
            issue["confidential"] = req.arg("confidential")
        if req.arg("labels") is not None:
            issue["labels"] = _labels(req.arg("labels"))
        issue["labels"] = sorted((set(issue["labels"]) | set(_labels(req.arg("add_labels"))))
                                 - set(_labels(req.arg("remove_labels"))))
        if event is not None:
            closing = event == "close"
            by = {k: self.users[self.caller(req)].get(k) for k in ("id", "username", "name", "web_url")}
            issue.update(state="closed" if closing else "opened", closed_at=self.now() if closing else None,
                         closed_by=by if closing else None)
        issue["updated_at"] = self.now()
        return json_response(issue)

    def _notes_of(self, pid: str, iid: str) -> list[dict[str, Any]]:
        issue = self.issues.get((self.project(pid)["id"], int(iid)))
        if issue is None:
            raise HTTPError(404, "Issue Not Found")  # find_noteable of lib/api/helpers/notes_helpers.rb
        return self.issue_notes.setdefault((issue["project_id"], issue["iid"]), [])

    def _comment(self, req: Request, pid: str, iid: str) -> Response:
        notes = self._notes_of(pid, iid)
        if not req.arg("body"):
            return _missing("body is missing")
        issue, user = self.issue(pid, iid), self.users[self.caller(req)]
        stamp = self.now()
        note = {"id": self.next_id(), "type": None, "body": self.read_written(req, f"#{iid}", req.arg("body")),
                "attachment": None,
                "author": {k: user.get(k) for k in ("id", "username", "name", "state", "avatar_url", "web_url")},
                "created_at": stamp, "updated_at": stamp, "system": False, "noteable_id": issue["id"],
                "noteable_type": "Issue", "noteable_iid": issue["iid"], "project_id": issue["project_id"],
                "resolvable": False, "confidential": False, "internal": False}
        notes.append(note)
        issue["user_notes_count"] += 1
        return json_response(note, 201)
