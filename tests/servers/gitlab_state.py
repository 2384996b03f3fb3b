"""State and seeding API of the fake GitLab: users, projects, MRs, discussions, members, statuses,
jobs, archives and files, each object shaped from a real GitLab payload sample."""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import itertools
import tarfile
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.servers import samples
from tests.servers.gitlab_ci import GitLabCIState
from tests.servers.gitlab_downstream import UNSTARTED
from tests.servers.gitlab_versions import GitLabVersions

Trace = bytes | str | Callable[[], Iterable[bytes]] | None
_EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# GitLab access levels (members API).
GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50


def _user_ref(user: Mapping[str, Any]) -> dict[str, Any]:
    """The short user object GitLab embeds as `author`."""
    keys = ("id", "username", "name", "state", "avatar_url", "web_url")
    return {k: user.get(k) for k in keys}


class GitLabState(GitLabCIState, GitLabVersions):
    """In-memory GitLab data plus the builder methods tests call to seed it."""

    def __init__(self, *, bot_user_id: int = 9001, bot_username: str = "hummingbird-bot",
                 read_user_id: int = 9002, read_username: str = "hummingbird-reader") -> None:
        self.users: dict[int, dict[str, Any]] = {}
        self.projects: dict[int, dict[str, Any]] = {}
        self.merge_requests: dict[tuple[int, int], dict[str, Any]] = {}
        self.mr_diffs: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.discussions: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.members: dict[tuple[int, int], dict[str, Any]] = {}
        self.statuses: dict[tuple[int, str], list[dict[str, Any]]] = {}
        self.jobs: dict[tuple[int, int], dict[str, Any]] = {}
        self.traces: dict[tuple[int, int], Trace] = {}
        self.archives: dict[tuple[int, str], bytes] = {}
        self.files: dict[tuple[int, str, str], bytes] = {}
        self.compares: dict[tuple[int, str, str], dict[str, Any]] = {}
        self.tokens: dict[str, tuple[int, str]] = {}
        self.init_ci()
        self.init_versions()
        self.token_projects: dict[str, frozenset[str]] = {}
        self._ids = itertools.count(100_001)
        self._ticks = itertools.count(1)
        self.bot_user = self.add_user(bot_user_id, bot_username, bot=True)
        self.read_user = self.add_user(read_user_id, read_username, bot=True)

    # --- helpers ----------------------------------------------------------------------------
    def web_base(self) -> str:
        """Base of web_url fields; the HTTP server overrides it with its own URL."""
        return "http://gitlab.example.com"

    def next_id(self) -> int:
        return next(self._ids)

    def now(self) -> str:
        """A deterministic, strictly increasing timestamp in GitLab's format."""
        moment = _EPOCH + timedelta(seconds=next(self._ticks))
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def user(self, user_id: int) -> dict[str, Any]:
        if user_id not in self.users:
            self.add_user(user_id, f"user{user_id}")
        return self.users[user_id]

    # --- users, tokens, projects, members -----------------------------------------------------
    def add_user(self, user_id: int, username: str, *, name: str | None = None,
                 bot: bool = False, **overrides: Any) -> dict[str, Any]:
        user = samples.load("gitlab/api/current_user.json")
        user.update(id=user_id, username=username, name=name or username, bot=bot,
                    email=f"{username}@example.com", public_email="", commit_email=f"{username}@example.com",
                    web_url=f"{self.web_base()}/{username}", identities=[])
        user.update(overrides)
        self.users[user_id] = user
        return user

    def add_token(self, token: str, user_id: int, scope: str = "api",
                  projects: Iterable[str | int] | None = None) -> None:
        """Accept `token` as `user_id`; scope "read_api" refuses writes with 403 like GitLab. With `projects`
        (paths or ids) the token sees only those, as a project access token or a member of private projects:
        any other project answers 404 Project Not Found, as GitLab hides a private project it may not read."""
        self.user(user_id)
        self.tokens[token] = (user_id, scope)
        if projects is not None:
            self.token_projects[token] = frozenset(str(p) for p in projects)

    def add_project(self, project_id: int = 1, path: str = "group/project", *,
                    default_branch: str = "main", **overrides: Any) -> dict[str, Any]:
        hook_project = samples.load("gitlab/webhooks_docs/merge_request_event.json")["project"]
        namespace, _, name = path.rpartition("/")
        web_url = f"{self.web_base()}/{path}"
        project = {k: hook_project[k] for k in ("description", "avatar_url", "visibility_level")}
        project.update(
            id=project_id, name=name, path=name, path_with_namespace=path,
            name_with_namespace=path.replace("/", " / "), default_branch=default_branch,
            web_url=web_url, http_url_to_repo=f"{web_url}.git", ssh_url_to_repo=f"git@example.com:{path}.git",
            namespace={"id": project_id + 1000, "name": namespace.rpartition("/")[2], "path": namespace,
                       "kind": "group", "full_path": namespace},
            visibility="private", archived=False, created_at=self.now(), ci_config_path="",
        )
        project.update(overrides)
        self.projects[project_id] = project
        return project

    def add_member(self, project_id: int, user_id: int, access_level: int = DEVELOPER,
                   **overrides: Any) -> dict[str, Any]:
        user = self.user(user_id)
        member = samples.load("gitlab/api/project_member_all_user.json")
        member.update(_user_ref(user), access_level=access_level, email=user.get("email"))
        member.update(overrides)
        self.members[(project_id, user_id)] = member
        return member

    # --- merge requests ---------------------------------------------------------------------
    def add_mr(self, project_id: int, iid: int = 1, *, author_id: int = 2, sha: str | None = None,
               source_branch: str = "feature", target_branch: str = "main", draft: bool = False,
               diffs: list[dict[str, Any]] | None = None, **overrides: Any) -> dict[str, Any]:
        project = self.projects[project_id]
        sha = sha or hashlib.sha1(f"{project_id}/{iid}".encode()).hexdigest()
        mr = samples.load("gitlab/api/gogitlab_get_merge_request.json")
        author = _user_ref(self.user(author_id))
        mr.update(
            id=self.next_id(), iid=iid, project_id=project_id, source_project_id=project_id,
            target_project_id=project_id, sha=sha, source_branch=source_branch,
            target_branch=target_branch, draft=draft, work_in_progress=draft, author=author,
            assignee=None, assignees=[], reviewers=[], user_notes_count=0, labels=[], milestone=None,
            reference=f"!{iid}", web_url=f"{project['web_url']}/-/merge_requests/{iid}",
            created_at=self.now(), head_pipeline=None, pipeline=None, has_conflicts=False,
            diff_refs={"base_sha": "0" * 40, "head_sha": sha, "start_sha": "0" * 40},
        )
        mr.update(overrides)
        self.merge_requests[(project_id, iid)] = mr
        default_diffs = samples.load("gitlab/api/gogitlab_list_merge_request_diff.json")
        self.mr_diffs[(project_id, iid)] = default_diffs if diffs is None else copy.deepcopy(diffs)
        refs = mr["diff_refs"]
        self.mr_versions.pop((project_id, iid), None)
        self.add_version(project_id, iid, head_sha=refs["head_sha"], base_sha=refs["base_sha"],
                         start_sha=refs["start_sha"])
        self.discussions.setdefault((project_id, iid), [])
        return mr

    # --- discussions and notes --------------------------------------------------------------
    def new_note(self, project_id: int, iid: int, body: str, author_id: int, *, internal: bool = False,
                 system: bool = False, individual: bool = False,
                 position: dict[str, Any] | None = None) -> dict[str, Any]:
        note = samples.load("gitlab/api/mr_discussions.json")[0]["notes"][0]
        stamp = self.now()
        note.update(
            id=self.next_id(), body=body, author=_user_ref(self.user(author_id)), created_at=stamp,
            updated_at=stamp, system=system, noteable_id=self.merge_requests[(project_id, iid)]["id"],
            noteable_iid=iid, project_id=project_id, internal=internal, confidential=internal,
            resolvable=not (individual or system), resolved=False, resolved_by=None, resolved_at=None,
            type=None if individual or system else "DiscussionNote",
        )
        if position is not None:
            note.update(type="DiffNote", position=copy.deepcopy(position), commit_id=position.get("head_sha"))
        return note

    def add_discussion(self, project_id: int, iid: int, body: str, author_id: int = 2, *,
                       replies: Iterable[tuple[int, str]] = (), individual_note: bool = False,
                       internal: bool = False, system: bool = False,
                       position: dict[str, Any] | None = None, resolved: bool = False) -> dict[str, Any]:
        """A discussion whose first note is `body` by `author_id`, then (author_id, body) replies."""
        first = self.new_note(project_id, iid, body, author_id, internal=internal, system=system,
                              individual=individual_note, position=position)
        discussion = {
            "id": hashlib.sha1(str(first["id"]).encode()).hexdigest(),
            "individual_note": individual_note, "notes": [first],
        }
        self.discussions[(project_id, iid)].append(discussion)
        self.merge_requests[(project_id, iid)]["user_notes_count"] += 0 if system else 1
        for reply_author, reply_body in replies:
            self.add_reply(project_id, iid, discussion["id"], reply_body, reply_author)
        if resolved:
            self.resolve(discussion, True, self.user(author_id))
        return discussion

    def add_reply(self, project_id: int, iid: int, discussion_id: str, body: str,
                  author_id: int) -> dict[str, Any]:
        discussion = self.find_discussion(project_id, iid, discussion_id)
        if discussion is None:
            raise KeyError(f"no discussion {discussion_id} on !{iid}")
        first = discussion["notes"][0]
        note = self.new_note(project_id, iid, body, author_id, internal=first["internal"],
                             position=first.get("position"))
        discussion["individual_note"] = False
        discussion["notes"].append(note)
        self.merge_requests[(project_id, iid)]["user_notes_count"] += 1
        return note

    def find_discussion(self, project_id: int, iid: int, discussion_id: str) -> dict[str, Any] | None:
        return next((d for d in self.discussions.get((project_id, iid), []) if d["id"] == discussion_id), None)

    def find_note(self, project_id: int, iid: int, note_id: int) -> dict[str, Any] | None:
        notes = (n for d in self.discussions.get((project_id, iid), []) for n in d["notes"])
        return next((n for n in notes if n["id"] == note_id), None)

    def all_notes(self, project_id: int, iid: int) -> list[dict[str, Any]]:
        """Every note of the MR in creation order (what GET .../notes lists)."""
        return [n for d in self.discussions.get((project_id, iid), []) for n in d["notes"]]

    def resolve(self, discussion: dict[str, Any], resolved: bool, by: Mapping[str, Any]) -> None:
        for note in discussion["notes"]:
            if note["resolvable"]:
                note.update(resolved=resolved, resolved_by=_user_ref(by) if resolved else None,
                            resolved_at=self.now() if resolved else None)

    # --- CI: statuses, jobs, traces ------------------------------------------------------------
    def add_commit_status(self, project_id: int, sha: str, name: str, status: str = "failed", *,
                          stage: str = "test", ref: str = "main", **overrides: Any) -> dict[str, Any]:
        entry = samples.load("gitlab/api/commit_statuses.json")[1]
        status_id = overrides.pop("id", None) or self.next_id()
        entry.update(id=status_id, sha=sha, name=name, status=status, stage=stage, ref=ref,
                     created_at=self.now(), target_url=f"{self.projects[project_id]['web_url']}/-/jobs/{status_id}")
        entry.update(overrides)
        self.statuses.setdefault((project_id, sha), []).append(entry)
        return entry

    def add_job(self, project_id: int, job_id: int, *, name: str = "unit-tests", status: str = "failed",
                stage: str = "test", ref: str = "main", sha: str = "0" * 40, pipeline_id: int = 1,
                trace: Trace = b"", **overrides: Any) -> dict[str, Any]:
        """A job; `trace` may be bytes, str, a callable yielding byte chunks (huge logs), or None
        (erased log: the job says when in `erased_at`, the trace endpoint answers 404)."""
        # GitLab creates a pipeline's jobs with it: a job is never older than its pipeline.
        self.ensure_pipeline(project_id, pipeline_id, sha, ref)
        job = samples.load("gitlab/api/job_single.json")
        job["created_at"] = self.pipelines[(project_id, pipeline_id)]["created_at"]
        # GitLab adds `failure_reason` to failed jobs (script_failure, runner_system_failure, ...).
        job.update(id=job_id, name=name, status=status, stage=stage, ref=ref,
                   web_url=f"{self.projects[project_id]['web_url']}/-/jobs/{job_id}",
                   **({"failure_reason": "script_failure"} if status == "failed" else {}))
        if trace is None:
            job["erased_at"] = self.now()
        if status in UNSTARTED:
            job.update(started_at=None, finished_at=None, duration=None)
        elif status == "running":
            job.update(finished_at=None)
        job.update(overrides)
        job["commit"].update(id=sha, short_id=sha[:8])
        job["pipeline"].update(id=pipeline_id, project_id=project_id, ref=ref, sha=sha)
        self.jobs[(project_id, job_id)] = job
        self.traces[(project_id, job_id)] = trace
        return job

    # --- repository -------------------------------------------------------------------------
    def add_file(self, project_id: int, path: str, content: bytes | str, ref: str = "main") -> None:
        data = content.encode() if isinstance(content, str) else content
        self.files[(project_id, ref, path)] = data

    def add_compare(self, project_id: int, from_sha: str, to_sha: str, diffs: Mapping[str, str],
                    titles: Iterable[str] = ("Fix the build",)) -> dict[str, Any]:
        """What GET /repository/compare answers for (from_sha, to_sha): one commit per title (the last is
        `to_sha`) and one modified file per `diffs` entry (path -> unified diff)."""
        commits = []
        titles = list(titles)
        for n, title in enumerate(titles):
            commit = samples.load("gitlab/api/gogitlab_get_commit.json")
            sha = to_sha if n == len(titles) - 1 else hashlib.sha1(f"{to_sha}{n}".encode()).hexdigest()
            commit.update(id=sha, short_id=sha[:11], title=title, message=title, created_at=self.now())
            for key in ("last_pipeline", "stats", "status", "project_id"):
                commit.pop(key, None)
            commits.append(commit)
        template = samples.load("gitlab/api/gogitlab_list_merge_request_diff.json")[0]
        files = [template | {"old_path": path, "new_path": path, "diff": diff} for path, diff in diffs.items()]
        project = self.projects[project_id]
        found = {"commit": commits[-1] if commits else None, "commits": commits, "diffs": files,
                 "compare_timeout": False, "compare_same_ref": from_sha == to_sha,
                 "web_url": f"{project['web_url']}/-/compare/{from_sha}...{to_sha}"}
        self.compares[(project_id, from_sha, to_sha)] = found
        return found

    def add_archive(self, project_id: int, ref: str, files: Mapping[str, bytes | str] | None = None, *,
                    data: bytes | None = None) -> bytes:
        """Register the tar.gz served for `ref` (a sha or branch): given bytes, or built from `files`
        under GitLab's `<project>-<ref>-<ref>/` top folder (default: the files added at that ref)."""
        if data is None:
            if files is None:
                files = {p: c for (pid, r, p), c in self.files.items() if pid == project_id and r == ref}
            data = build_tar_gz(f"{self.projects[project_id]['path']}-{ref}-{ref}", files)
        self.archives[(project_id, ref)] = data
        return data


def build_tar_gz(top: str, files: Mapping[str, bytes | str]) -> bytes:
    """A deterministic tar.gz with every file under `top/`."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, content in sorted(files.items()):
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mtime, info.mode = len(data), 1_767_600_000, 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)
