"""Konflux data source: PipelineRuns, TaskRuns and pod logs from the live cluster API and Kubearchive,
streamed as JSONL/log files with per-reason counts written to the response metadata at the end."""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from hummingbird_agent import budgets
from hummingbird_agent.data_sources.kube import KubeClient, KubeCredentials, load_kubeconfig, segment
from hummingbird_agent.data_sources.kube_page import RawItem
from hummingbird_agent.tools.base import StreamingResponse, ToolDef, ToolResult
from hummingbird_agent.tools.registry import ToolRegistry

SOURCE = "konflux"
BUILD_SHA_LABEL = "pipelinesascode.tekton.dev/sha"
TEST_SHA_LABEL = "pac.test.appstudio.openshift.io/sha"
PIPELINERUN_LABEL = "tekton.dev/pipelineRun"
PIPELINERUNS = "/apis/tekton.dev/v1/namespaces/{ns}/pipelineruns"
TASKRUNS = "/apis/tekton.dev/v1/namespaces/{ns}/taskruns"
POD = "/api/v1/namespaces/{ns}/pods/{pod}"
STATUS_VALUES = ("True", "False", "Unknown")

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"}
_NAMESPACE = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
              "description": "Konflux namespace (tenant), from the commit status target_url, e.g. my-tenant."}
_SHA = {"type": "string", "pattern": r"^[0-9a-f]{7,64}$", "description": "Full commit SHA."}
_STATUS = {
    "type": "array", "items": {"enum": list(STATUS_VALUES)}, "uniqueItems": True,
    "description": 'Keep only runs whose status.conditions[0].status is listed: "True" succeeded, '
                   '"False" failed, "Unknown" still running. Omit for all. Counts always cover all runs.',
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@dataclass(slots=True)
class StreamStats:
    """What a JSONL stream saw: runs per reason (all of them), and how many the filter kept."""

    by_reason: Counter[str] = field(default_factory=Counter)
    included: int = 0
    excluded: int = 0


def items_to_jsonl(items: Iterable[RawItem], status: set[str] | None, stats: StreamStats) -> Iterator[bytes]:
    """Items as JSONL chunks of about STREAM_CHUNK_BYTES; counts every item, keeps those the allowlist allows
    (items without conditions always pass). Each item's JSON text is passed through as the server sent it."""
    batch: list[bytes] = []
    size = 0
    for item in items:
        condition = item.condition
        stats.by_reason[str(condition.get("reason") or "Unknown") if condition else "NoConditions"] += 1
        if status is not None and condition is not None and condition.get("status") not in status:
            stats.excluded += 1
            continue
        stats.included += 1
        batch.append(item.raw)
        batch.append(b"\n")
        size += len(item.raw) + 1
        if size >= budgets.STREAM_CHUNK_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


def _finalize(chunks: Iterable[bytes], metadata: dict[str, Any], stats: StreamStats,
              gaps: list[str]) -> Iterator[bytes]:
    """Pass the chunks through; once they are exhausted, write the counts (and any gaps) to `metadata`."""
    yield from chunks
    metadata.update(counts=dict(stats.by_reason), included=stats.included, excluded=stats.excluded)
    if gaps:
        metadata["gaps"] = list(gaps)


def _runs_response(client: KubeClient, path: str, selectors: list[str], status: list[str] | None) -> StreamingResponse:
    stats = StreamStats()
    gaps: list[str] = []
    metadata: dict[str, Any] = {}
    items = client.iter_resources(path, selectors, gaps)
    chunks = items_to_jsonl(items, set(status) if status is not None else None, stats)
    return StreamingResponse(_finalize(chunks, metadata, stats, gaps), suffix=".jsonl", metadata=metadata)


def get_pipelineruns(client: KubeClient, namespace: str, commit_sha: str,
                     status: list[str] | None = None) -> StreamingResponse:
    """BUILD and TEST PipelineRuns of a commit (both label selectors, both sources, deduplicated)."""
    selectors = [f"{BUILD_SHA_LABEL}={commit_sha}", f"{TEST_SHA_LABEL}={commit_sha}"]
    return _runs_response(client, PIPELINERUNS.format(ns=segment(namespace)), selectors, status)


def get_taskruns(client: KubeClient, namespace: str, commit_sha: str | None = None, pipelinerun: str | None = None,
                 status: list[str] | None = None) -> StreamingResponse | ToolResult:
    """TaskRuns of one PipelineRun (server-side filtered, small) or of a whole commit (both selectors)."""
    if (commit_sha is None) == (pipelinerun is None):
        return ToolResult.error("bad_arguments", "give exactly one of commit_sha or pipelinerun")
    if pipelinerun is not None:
        selectors = [f"{PIPELINERUN_LABEL}={pipelinerun}"]
    else:
        selectors = [f"{BUILD_SHA_LABEL}={commit_sha}", f"{TEST_SHA_LABEL}={commit_sha}"]
    return _runs_response(client, TASKRUNS.format(ns=segment(namespace)), selectors, status)


def get_pod_log(client: KubeClient, namespace: str, pod: str,
                container: str | None = None) -> StreamingResponse | ToolResult:
    """One container's log, or every container's with `=== name ===` headers; Kubearchive first, then live."""
    path = POD.format(ns=segment(namespace), pod=segment(pod))
    session = client.session()
    if container is not None:
        containers, headers = [container], False
    else:
        spec = client.get_object(session, path)
        if spec is None:
            session.close()
            return ToolResult.error("not_found", f"pod {pod} is in neither Kubearchive nor the live API (it has "
                                    "probably expired); its logs are unavailable - state this gap in the report")
        containers = [c["name"] for c in (spec.get("spec") or {}).get("containers", []) if c.get("name")]
        headers = True
    gaps: list[str] = []
    metadata: dict[str, Any] = {"containers": containers}
    return StreamingResponse(_logs(client, session, path, containers, headers, gaps, metadata), suffix=".log",
                             metadata=metadata)


def _logs(client: KubeClient, session: Any, path: str, containers: list[str], headers: bool,
          gaps: list[str], metadata: dict[str, Any]) -> Iterator[bytes]:
    with session:
        for name in containers:
            if headers:
                yield f"=== {name} ===\n".encode()
            yield from client.iter_log(session, path + "/log", name, gaps)
    if gaps:
        metadata["gaps"] = list(gaps)


TOOL_DEFS = (
    ToolDef(
        "konflux_get_pipelineruns",
        "All Konflux PipelineRuns (BUILD and TEST) of a commit as JSONL, one full PipelineRun per line, from "
        "Kubearchive and the live cluster, deduplicated. Metadata gives counts per status reason.",
        _schema({"namespace": _NAMESPACE, "commit_sha": _SHA, "status": _STATUS}, ["namespace", "commit_sha"]),
        get_pipelineruns,
    ),
    ToolDef(
        "konflux_get_taskruns",
        "TaskRuns as JSONL: those of one PipelineRun (preferred, small) or all of a commit (can be hundreds of MB).",
        _schema({"namespace": _NAMESPACE, "commit_sha": _SHA, "status": _STATUS,
                 "pipelinerun": {**_NAME, "description": "PipelineRun name (metadata.name)."}}, ["namespace"]),
        get_taskruns,
    ),
    ToolDef(
        "konflux_get_pod_log",
        "Log of a TaskRun pod (status.podName): one container (e.g. step-build), or all containers with "
        "'=== name ===' headers. Expired logs come back as a stated gap.",
        _schema({"namespace": _NAMESPACE, "pod": {**_NAME, "description": "Pod name (TaskRun status.podName)."},
                 "container": {**_NAME, "description": "Container name, e.g. step-build; omit for all."}},
                ["namespace", "pod"]),
        get_pod_log,
    ),
)

TOOL_NOTES = """\
PipelineRuns/TaskRuns are Tekton objects. Status: .status.conditions[0].reason/.message; success is
Succeeded or Completed, anything else (Failed, PipelineRunTimeout, Cancelled...) is a failure. Component:
label appstudio.openshift.io/component. Child TaskRuns: .status.childReferences[]. Pod: .status.podName.
BUILD runs carry label pipelinesascode.tekton.dev/sha, TEST runs pac.test.appstudio.openshift.io/sha.
Fetch TaskRuns per PipelineRun, not per commit. Read JSONL files with jq -c or python3 in the sandbox.
Link a PipelineRun with konflux_pipelinerun_url_pattern from the response metadata."""


def ui_metadata(cluster_url: str) -> dict[str, str]:
    """Static links for reviewer-facing URLs, derived from the cluster's domain."""
    host = urlsplit(cluster_url).hostname or cluster_url
    for prefix in ("konflux-ui.apps.", "console-openshift-console.apps.", "api.", "apps."):
        if host.startswith(prefix):
            host = host[len(prefix):]
            break
    ui = f"https://konflux-ui.apps.{host}"
    return {"konflux_ui": ui,
            "konflux_pipelinerun_url_pattern": ui + "/ns/{namespace}/applications/{application}/pipelineruns/{name}"}


def register(registry: ToolRegistry, cluster_url: str, kubeconfig_path: str,
             kubearchive_url: str | None = None, credentials: KubeCredentials | None = None) -> None:
    """Register the Konflux tools with a client bound in (kubeconfig read here, never exposed)."""
    client = KubeClient(credentials or load_kubeconfig(kubeconfig_path), kubearchive_url)
    tools = [dataclasses.replace(t, handler=functools.partial(t.handler, client)) for t in TOOL_DEFS]
    registry.register_data_source(SOURCE, tools, TOOL_NOTES, ui_metadata(cluster_url))
