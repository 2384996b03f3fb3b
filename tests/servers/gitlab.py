"""Stateful fake GitLab REST API (v4) for the unmodified python-gitlab client: token auth, Link-header
pagination, MR discussions/notes, members, commit statuses, jobs and traces, archives and files."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote, urlencode

from tests.servers.base import FakeHTTPServer, HTTPError, Request, Response, chunked, json_response
from tests.servers.gitlab_ci import JOB_STATES
from tests.servers.gitlab_issues import GitLabIssues
from tests.servers.gitlab_markdown import quick_actions, references
from tests.servers.gitlab_state import GitLabState

API = "/api/v4"
_P = API + r"/projects/(?P<pid>[^/]+)"
_MR = _P + r"/merge_requests/(?P<iid>\d+)"
_DISC = _MR + r"/discussions/(?P<did>[0-9a-f]+)"
_ANY_PROJECT_PATH = re.compile(_P + r"(?:/.*)?")
# Streamed bodies (traces, archives) go out in chunks of this size, like a real proxy would.
STREAM_CHUNK_BYTES = 64 * 1024
_WRITE_METHODS = {"POST", "PUT", "DELETE", "PATCH"}
# GitLab rejects longer note bodies with 400 (Note::MAX_NOTE_LENGTH).
MAX_NOTE_CHARS = 1_000_000


def not_found(what: str = "Not found") -> HTTPError:
    return HTTPError(404, what)


def _note_body(req: Request) -> str:
    body = req.arg("body", "")
    if len(body) > MAX_NOTE_CHARS:
        raise HTTPError(400, f"Note is too long (maximum is {MAX_NOTE_CHARS} characters)")
    return body


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in {"true", "1"}


class GitLabServer(FakeHTTPServer, GitLabState, GitLabIssues):
    """Fake GitLab at `url`; seed it with the GitLabState builders (add_project, add_mr, ...)."""

    name = "gitlab"

    def __init__(self, *, bot_token: str = "bot-token", read_token: str = "read-token",
                 bot_user_id: int = 9001, bot_username: str = "hummingbird-bot") -> None:
        FakeHTTPServer.__init__(self)
        GitLabState.__init__(self, bot_user_id=bot_user_id, bot_username=bot_username)
        self.bot_token, self.read_token = bot_token, read_token
        self.add_token(bot_token, bot_user_id)
        self.add_token(read_token, self.read_user["id"], scope="read_api")
        self.init_issues()
        self.quick_actions_run: list[dict[str, Any]] = []
        """Every quick action a written note or description ran: {user, where, command, arg}."""
        self.references_written: list[dict[str, Any]] = []
        """Every mention (`user`) and other project's reference (`foreign`) a written text made."""
        self._register_routes()
        self.register_issue_routes()
        self.register_version_routes()

    def web_base(self) -> str:
        return self.url if self._server is not None else super().web_base()

    def start(self) -> GitLabServer:
        super().start()
        # Users made before the port was known point elsewhere; python-gitlab's auth() checks web_url.
        for user in self.users.values():
            user["web_url"] = f"{self.url}/{user['username']}"
        return self

    def _register_routes(self) -> None:
        r = self.route
        r("GET", API + r"/user", lambda req: json_response(self.users[self.caller(req)]))
        r("GET", _P, lambda req, pid: json_response(self.project(pid)))
        r("GET", _P + r"/members/all", self._members_list)
        r("GET", _P + r"/members/all/(?P<uid>\d+)", self._member)
        r("GET", _P + r"/merge_requests", self._mr_list)
        r("GET", _MR, lambda req, pid, iid: json_response(self.mr(pid, iid)))
        r("GET", _MR + r"/diffs", lambda req, pid, iid: self.paginate(req, self._diffs(pid, iid)))
        r("GET", _MR + r"/changes", self._changes)
        r("GET", _MR + r"/discussions", lambda req, pid, iid: self.paginate(req, self._discs(pid, iid)))
        r("POST", _MR + r"/discussions", self._create_discussion)
        r("GET", _DISC, lambda req, pid, iid, did: json_response(self.discussion(pid, iid, did)))
        r("PUT", _DISC, self._resolve_discussion)
        r("POST", _DISC + r"/notes", self._reply)
        r("GET", _DISC + r"/notes/(?P<nid>\d+)", self._get_note)
        r("PUT", _DISC + r"/notes/(?P<nid>\d+)", self._update_note)
        r("GET", _MR + r"/notes", self._notes_list)
        r("POST", _MR + r"/notes", self._create_note)
        r("GET", _MR + r"/notes/(?P<nid>\d+)", self._get_note)
        r("PUT", _MR + r"/notes/(?P<nid>\d+)", self._update_note)
        r("DELETE", _MR + r"/notes/(?P<nid>\d+)", self._delete_note)
        r("GET", _P + r"/repository/commits/(?P<sha>[^/]+)/statuses", self._statuses)
        r("GET", _P + r"/jobs", self._project_jobs)
        r("GET", _P + r"/jobs/(?P<job>\d+)", lambda req, pid, job: json_response(self.render_job(self.job(pid, job))))
        r("GET", _P + r"/jobs/(?P<job>\d+)/trace", self._trace)
        r("GET", _P + r"/pipelines", self._pipelines)
        r("GET", _P + r"/pipelines/(?P<pipeline>\d+)/jobs", self._pipeline_jobs)
        r("GET", _P + r"/pipelines/(?P<pipeline>\d+)", self._pipeline)
        r("GET", _P + r"/pipelines/(?P<pipeline>\d+)/bridges", self._pipeline_bridges)
        r("GET", _P + r"/pipelines/(?P<pipeline>\d+)/test_report",
          lambda req, pid, pipeline: json_response(self.test_report(self.project(pid)["id"], int(pipeline))))
        r("GET", _P + r"/pipelines/(?P<pipeline>\d+)/test_report_summary",
          lambda req, pid, pipeline: json_response(self.test_report_summary(self.project(pid)["id"], int(pipeline))))
        r("POST", _P + r"/statuses/(?P<sha>[0-9a-f]+)", self._post_status)
        r("GET", _P + r"/repository/compare", self._compare)
        r("GET", _P + r"/repository/archive(?:\.(?P<fmt>[a-z0-9.]+))?", self._archive)
        r("GET", _P + r"/repository/files/(?P<path>[^/]+)/raw", self._raw_file)
        r("GET", _P + r"/repository/files/(?P<path>[^/]+)", self._file)

    # --- auth and errors ----------------------------------------------------------------------
    def _token(self, req: Request) -> str | None:
        bearer = req.header("Authorization") or ""
        return req.header("PRIVATE-TOKEN") or (bearer[7:] if bearer.startswith("Bearer ") else None)

    def caller(self, req: Request) -> int:
        """The user id the request's token belongs to."""
        return self.tokens[self._token(req) or ""][0]

    def read_written(self, req: Request, where: str, text: str, *, commands: bool = True) -> str:
        """A note's or description's text as GitLab keeps it (its quick actions run, as the writer, and taken
        out); its mentions and other projects' references recorded."""
        user = self.caller(req)
        kept, ran = quick_actions(text) if commands else (text, [])
        self.quick_actions_run += [{"user": user, "where": where, "command": c, "arg": a} for c, a in ran]
        found = references(kept)
        self.references_written += [{"user": user, "where": where, "kind": "user", "target": name}
                                     for name in found.users]
        self.references_written += [{"user": user, "where": where, "kind": "foreign", "target": ref}
                                    for ref in found.foreign]
        return kept

    def authorize(self, req: Request) -> Response | None:
        token = self._token(req)
        if token not in self.tokens:
            return json_response({"message": "401 Unauthorized"}, 401)
        if req.method in _WRITE_METHODS and self.tokens[token][1] == "read_api":
            return json_response({
                "error": "insufficient_scope", "scope": "api",
                "error_description": "The request requires higher privileges than provided by the access token.",
            }, 403)
        return self._hidden_project(req, token)

    def _hidden_project(self, req: Request, token: str) -> Response | None:
        """404 Project Not Found for a project a project-limited token may not see (by id or path)."""
        visible = self.token_projects.get(token)
        match = _ANY_PROJECT_PATH.fullmatch(req.path)
        if visible is None or match is None:
            return None
        pid = unquote(match["pid"])
        found = next((p for p in self.projects.values() if pid in (str(p["id"]), p["path_with_namespace"])), None)
        if found is not None and {str(found["id"]), found["path_with_namespace"]} & visible:
            return None
        return self.error(404, "Project Not Found")

    # --- lookups ----------------------------------------------------------------------------
    def project(self, pid: str | int) -> dict[str, Any]:
        key = str(pid)
        found = (self.projects.get(int(key)) if key.isdigit()
                 else next((p for p in self.projects.values() if p["path_with_namespace"] == key), None))
        if found is None:
            raise not_found("Project Not Found")
        return found

    def mr(self, pid: str | int, iid: str | int) -> dict[str, Any]:
        project_id = self.project(pid)["id"]
        found = self.merge_requests.get((project_id, int(iid)))
        if found is None:
            raise not_found("Not found")
        return found

    def discussion(self, pid: str, iid: str, did: str) -> dict[str, Any]:
        mr = self.mr(pid, iid)
        found = self.find_discussion(mr["project_id"], mr["iid"], did)
        if found is None:
            raise not_found("Not found")
        return found

    def note(self, pid: str, iid: str, nid: str) -> dict[str, Any]:
        mr = self.mr(pid, iid)
        found = self.find_note(mr["project_id"], mr["iid"], int(nid))
        if found is None:
            raise not_found("Note Not Found")
        return found

    def job(self, pid: str, job: str) -> dict[str, Any]:
        found = self.jobs.get((self.project(pid)["id"], int(job)))
        if found is None:
            raise not_found("Not found")
        return found

    # --- pagination ---------------------------------------------------------------------------
    def paginate(self, req: Request, items: list[Any], counted: bool = True) -> Response:
        """GitLab offset pagination: page/per_page, Link header (next/prev/first/last) and X-* headers; a list GitLab
        pages `without_count` has no X-Total, X-Total-Pages nor `last` link."""
        per_page = max(1, min(100, int(req.arg("per_page", 20))))
        page = max(1, int(req.arg("page", 1)))
        total_pages = max(1, -(-len(items) // per_page))
        headers = {
            "X-Total": str(len(items)), "X-Total-Pages": str(total_pages), "X-Per-Page": str(per_page),
            "X-Page": str(page), "X-Next-Page": str(page + 1) if page < total_pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
        }
        rels = {"first": 1, "last": total_pages} if counted else {"first": 1}
        if not counted:
            del headers["X-Total"], headers["X-Total-Pages"]
        if page < total_pages:
            rels["next"] = page + 1
        if page > 1:
            rels["prev"] = page - 1
        query = {k: v[0] for k, v in req.query.items()}
        links = [f'<{self.url}{req.path}?{urlencode(query | {"page": n, "per_page": per_page})}>; rel="{rel}"'
                 for rel, n in rels.items()]
        headers["Link"] = ", ".join(links)
        return json_response(items[(page - 1) * per_page: page * per_page], headers=headers)

    # --- members and MRs ----------------------------------------------------------------------
    def _members_list(self, req: Request, pid: str) -> Response:
        project_id = self.project(pid)["id"]
        return self.paginate(req, [m for (p, _), m in self.members.items() if p == project_id])

    def _member(self, req: Request, pid: str, uid: str) -> Response:
        member = self.members.get((self.project(pid)["id"], int(uid)))
        if member is None:
            raise not_found("Not found")
        return json_response(member)

    def _mr_list(self, req: Request, pid: str) -> Response:
        project_id = self.project(pid)["id"]
        state, branch = req.arg("state", "all"), req.arg("source_branch")
        mrs = [m for (p, _), m in sorted(self.merge_requests.items(), reverse=True) if p == project_id
               and state in ("all", m["state"]) and branch in (None, m["source_branch"])]
        return self.paginate(req, mrs)

    def _diffs(self, pid: str, iid: str) -> list[dict[str, Any]]:
        mr = self.mr(pid, iid)
        return self.mr_diffs[(mr["project_id"], mr["iid"])]

    def _changes(self, req: Request, pid: str, iid: str) -> Response:
        return json_response(self.mr(pid, iid) | {"changes": self._diffs(pid, iid), "overflow": False})

    # --- discussions and notes ----------------------------------------------------------------
    def _discs(self, pid: str, iid: str) -> list[dict[str, Any]]:
        mr = self.mr(pid, iid)
        return self.discussions[(mr["project_id"], mr["iid"])]

    def _create_discussion(self, req: Request, pid: str, iid: str) -> Response:
        mr = self.mr(pid, iid)
        body = self.read_written(req, f"!{iid}", _note_body(req))
        disc = self.add_discussion(mr["project_id"], mr["iid"], body, self.caller(req),
                                   internal=_truthy(req.arg("internal", False)), position=req.arg("position"))
        return json_response(disc, 201)

    def _resolve_discussion(self, req: Request, pid: str, iid: str, did: str) -> Response:
        disc = self.discussion(pid, iid, did)
        self.resolve(disc, _truthy(req.arg("resolved")), self.users[self.caller(req)])
        return json_response(disc)

    def _reply(self, req: Request, pid: str, iid: str, did: str) -> Response:
        mr = self.mr(pid, iid)
        self.discussion(pid, iid, did)
        note = self.add_reply(mr["project_id"], mr["iid"], did, self.read_written(req, f"!{iid}", _note_body(req)),
                              self.caller(req))
        return json_response(note, 201)

    def _get_note(self, req: Request, pid: str, iid: str, nid: str, did: str | None = None) -> Response:
        return json_response(self.note(pid, iid, nid))

    def _update_note(self, req: Request, pid: str, iid: str, nid: str, did: str | None = None) -> Response:
        note = self.note(pid, iid, nid)
        if req.arg("body") is not None:
            note.update(body=self.read_written(req, f"!{iid}", _note_body(req)), updated_at=self.now())
        if req.arg("resolved") is not None and note["resolvable"]:
            resolved = _truthy(req.arg("resolved"))
            note.update(resolved=resolved, resolved_at=self.now() if resolved else None)
        return json_response(note)

    def _delete_note(self, req: Request, pid: str, iid: str, nid: str) -> Response:
        note = self.note(pid, iid, nid)
        for disc in self._discs(pid, iid):
            disc["notes"] = [n for n in disc["notes"] if n is not note]
        self._discs(pid, iid)[:] = [d for d in self._discs(pid, iid) if d["notes"]]
        return Response(204)

    def _notes_list(self, req: Request, pid: str, iid: str) -> Response:
        mr = self.mr(pid, iid)
        key = "updated_at" if req.arg("order_by") == "updated_at" else "created_at"
        notes = sorted(self.all_notes(mr["project_id"], mr["iid"]), key=lambda n: (n[key], n["id"]),
                       reverse=req.arg("sort", "desc") != "asc")
        return self.paginate(req, notes)

    def _create_note(self, req: Request, pid: str, iid: str) -> Response:
        mr = self.mr(pid, iid)
        disc = self.add_discussion(mr["project_id"], mr["iid"], self.read_written(req, f"!{iid}", _note_body(req)),
                                   self.caller(req), individual_note=True, internal=_truthy(req.arg("internal", False)))
        return json_response(disc["notes"][0], 201)

    # --- CI -----------------------------------------------------------------------------------
    def _statuses(self, req: Request, pid: str, sha: str) -> Response:
        entries = self.statuses.get((self.project(pid)["id"], sha), [])
        for field in ("ref", "stage", "name"):
            wanted = req.arg(field)
            entries = [e for e in entries if wanted is None or e.get(field) == wanted]
        return self.paginate(req, entries)

    def _trace(self, req: Request, pid: str, job: str) -> Response:
        self.job(pid, job)
        trace = self.traces[(self.project(pid)["id"], int(job))]
        if trace is None:
            raise not_found("Not found")
        return Response(200, _stream(trace), {"Content-Type": "text/plain; charset=utf-8"})

    def _pipelines(self, req: Request, pid: str) -> Response:
        return self.paginate(req, self.list_pipelines(self.project(pid)["id"], req))

    def _pipeline_jobs(self, req: Request, pid: str, pipeline: str) -> Response:
        jobs = self.pipeline_jobs(self.project(pid)["id"], int(pipeline), _truthy(req.arg("include_retried", False)),
                                  req.query.get("scope[]") or req.query.get("scope"))
        return self.paginate(req, jobs)

    def _pipeline(self, req: Request, pid: str, pipeline: str) -> Response:
        found = self.pipelines.get((self.project(pid)["id"], int(pipeline)))
        if found is None:
            raise not_found()
        return json_response(found)

    def _pipeline_bridges(self, req: Request, pid: str, pipeline: str) -> Response:
        project_id, scope = self.project(pid)["id"], req.query.get("scope[]") or req.query.get("scope")
        if (project_id, int(pipeline)) not in self.pipelines:
            raise not_found()
        if scope and set(scope) - JOB_STATES:
            raise HTTPError(400, "scope does not have a valid value")
        return self.paginate(req, self.pipeline_bridges(project_id, int(pipeline), scope))

    def _project_jobs(self, req: Request, pid: str) -> Response:
        # lib/api/ci/jobs.rb pages this list `without_count`.
        jobs = self.project_jobs(self.project(pid)["id"], req.query.get("scope[]") or req.query.get("scope"))
        return self.paginate(req, jobs, counted=False)

    def _post_status(self, req: Request, pid: str, sha: str) -> Response:
        project_id = self.project(pid)["id"]
        author = self.users[self.caller(req)]
        keys = ("id", "username", "name", "state", "avatar_url", "web_url")
        return json_response(self.post_status(project_id, sha, req, {k: author.get(k) for k in keys}), 201)

    # --- repository ---------------------------------------------------------------------------
    def _compare(self, req: Request, pid: str) -> Response:
        """GET /repository/compare?from=&to=: an unknown pair of refs answers 404 like an unknown ref."""
        project = self.project(pid)
        found = self.compares.get((project["id"], req.arg("from"), req.arg("to")))
        found = found or self.compare_history(project["id"], req.arg("from"), req.arg("to"))
        if found is None:
            raise not_found("Ref Not Found")
        return json_response(found)

    def _archive(self, req: Request, pid: str, fmt: str = "tar.gz") -> Response:
        project = self.project(pid)
        ref = req.arg("sha") or project["default_branch"]
        data = self.archives.get((project["id"], ref))
        if data is None:
            raise not_found("Not found")
        headers = {"Content-Type": "application/octet-stream",
                   "Content-Disposition": f'attachment; filename="{project["path"]}-{ref}.{fmt}"'}
        return Response(200, chunked(data, STREAM_CHUNK_BYTES), headers)

    def _file_bytes(self, req: Request, pid: str, path: str) -> tuple[bytes, str]:
        ref = req.arg("ref")
        if not ref:
            raise HTTPError(400, "ref is missing")
        data = self.files.get((self.project(pid)["id"], ref, path))
        if data is None:
            raise not_found("File Not Found")
        return data, ref

    def _raw_file(self, req: Request, pid: str, path: str) -> Response:
        data, _ = self._file_bytes(req, pid, path)
        return Response(200, data, {"Content-Type": "text/plain; charset=utf-8"})

    def _file(self, req: Request, pid: str, path: str) -> Response:
        data, ref = self._file_bytes(req, pid, path)
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return json_response({
            "file_name": path.rpartition("/")[2], "file_path": path, "size": len(data), "encoding": "base64",
            "content": base64.b64encode(data).decode(), "content_sha256": hashlib.sha256(data).hexdigest(),
            "ref": ref, "blob_id": blob, "commit_id": "0" * 40, "last_commit_id": "0" * 40,
            "execute_filemode": False,
        })


def _stream(trace: bytes | str | Any) -> Iterator[bytes]:
    if isinstance(trace, str):
        trace = trace.encode()
    if isinstance(trace, bytes):
        return chunked(trace, STREAM_CHUNK_BYTES)
    source: Iterable[bytes] = trace()
    return iter(source)
