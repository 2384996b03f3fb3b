"""The fake GitLab's merge request diff versions: one per push to the MR's branch (and per change of its target
branch), each with the head it showed and its merge base, listed as GitLab does (lib/api/merge_request_diffs.rb:
`merge_request_diffs.order_id_desc`, paginated with counts, rendered as Entities::MergeRequestDiff)."""

from __future__ import annotations

from typing import Any

from tests.servers.base import HTTPError, Request, Response, json_response

_MR = r"/api/v4/projects/(?P<pid>[^/]+)/merge_requests/(?P<iid>\d+)"


class GitLabVersions:
    """Versions per (project, iid), oldest first; mixed into GitLabState (add_mr records the first one) and so into
    GitLabServer, which provides mr(), paginate() and route()."""

    merge_requests: dict[tuple[int, int], dict[str, Any]]
    mr_diffs: dict[tuple[int, int], list[dict[str, Any]]]
    route: Any
    mr: Any
    paginate: Any
    now: Any
    next_id: Any

    def init_versions(self) -> None:
        self.mr_versions: dict[tuple[int, int], list[dict[str, Any]]] = {}

    def register_version_routes(self) -> None:
        self.route("GET", _MR + r"/versions", lambda req, pid, iid: self.paginate(req, self._versions(pid, iid)))
        self.route("GET", _MR + r"/versions/(?P<vid>\d+)", self._version_detail)

    def add_version(self, project_id: int, iid: int, *, head_sha: str, base_sha: str,
                    start_sha: str | None = None) -> dict[str, Any]:
        """A version of MR !iid showing `head_sha` on `base_sha`; the MR's head and diff_refs are not changed (an
        earlier push seeded after the MR, or a version of a head GitLab recorded twice)."""
        version = {"id": self.next_id(), "head_commit_sha": head_sha, "base_commit_sha": base_sha,
                   "start_commit_sha": start_sha or base_sha, "created_at": self.now(),
                   "merge_request_id": self.merge_requests[(project_id, iid)]["id"], "state": "collected",
                   "real_size": str(len(self.mr_diffs.get((project_id, iid), []))), "patch_id_sha": None}
        self.mr_versions.setdefault((project_id, iid), []).append(version)
        return version

    def push_mr(self, project_id: int, iid: int, *, sha: str, base_sha: str,
                start_sha: str | None = None) -> dict[str, Any]:
        """A push to the MR's branch: a new version, and the MR's head and diff_refs are now that version's
        (MergeRequests::RefreshService reloads the diff)."""
        version = self.add_version(project_id, iid, head_sha=sha, base_sha=base_sha, start_sha=start_sha)
        mr = self.merge_requests[(project_id, iid)]
        mr.update(sha=sha, diff_refs={"base_sha": base_sha, "head_sha": sha, "start_sha": start_sha or base_sha})
        return version

    def _versions(self, pid: str, iid: str) -> list[dict[str, Any]]:
        mr = self.mr(pid, iid)
        return sorted(self.mr_versions.get((mr["project_id"], mr["iid"]), []), key=lambda v: -int(v["id"]))

    def _version_detail(self, req: Request, pid: str, iid: str, vid: str) -> Response:
        mr = self.mr(pid, iid)
        version = next((v for v in self._versions(pid, iid) if v["id"] == int(vid)), None)
        if version is None:
            raise HTTPError(404, "Not found")
        return json_response(version | {"commits": [], "diffs": self.mr_diffs[(mr["project_id"], mr["iid"])]})
