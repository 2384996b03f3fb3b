"""The panda tools as a builtin MCP client for one incident: the adapter and indexes bound into each
handler, and the incident's task dict injected into the tools that take `task` (the model never sees it as
an argument). All 14 are read-only; their results are capped by the exploration gate like every tool's."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from hummingbird_agent.bamboo.mcp import BuiltinMcpClient
from hummingbird_agent.bamboo.panda import tools as t
from hummingbird_agent.tools import ToolDef

SERVER = "panda"
_INT = {"type": "integer", "minimum": 1}


def _schema(properties: Mapping[str, Any] | None = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties or {}), "required": list(required),
            "additionalProperties": False}


# name -> (handler, takes the task, description, parameters schema, needs the server)
CATALOGUE: dict[str, tuple[Callable[..., Any], bool, str, dict[str, Any], bool]] = {
    "fetch_linked_log_files": (t.fetch_linked_log_files, True,
                               "The brokerage/dispatch logs linked (<a href>) from the task's errorDialog: "
                               "{url: text}, up to 5.", _schema(), True),
    "get_parent_task": (t.get_parent_task, False, "The full task dict of a task's retry parent (its retryID), "
                        "or null.", _schema({"retry_id": _INT}, ("retry_id",)), True),
    "get_retry_chain": (t.get_retry_chain, True, "The task's retry ancestors, compact (jediTaskID, status, "
                        "errorDialog, retryID, transUses).",
                        _schema({"max_depth": {**_INT, "default": 3}}), True),
    "get_task_jobs_summary": (t.get_task_jobs_summary, True, "The task's jobs: status_counts, top_errors "
                              "[{diag, count}] and failed_job_ids.", _schema(), True),
    "get_scout_job_details": (t.get_scout_job_details, True, "Scout jobs, then failed jobs with distinct "
                              "pilotErrorCode: site, status, pilot error, exit code, CPU/wall time, maxPSS, "
                              "cores, memory_leak.", _schema({"max_jobs": {**_INT, "default": 5}}), True),
    "get_task_input_datasets": (t.get_task_input_datasets, True, "The task's input and pseudo-input datasets "
                                "with file counts per status.", _schema(), True),
    "search_panda_server_source": (t.search_panda_server_source, False, "Search the PanDA server/JEDI source "
                                   "(offline index): snippets with path and line.",
                                   _schema({"query": {"type": "string", "maxLength": 500},
                                            "max_results": {**_INT, "default": 10}}, ("query",)), False),
    "search_panda_docs": (t.search_panda_docs, False, "Search the PanDA documentation (offline index): "
                          "sections with path, title and snippet.",
                          _schema({"query": {"type": "string", "maxLength": 500},
                                   "max_results": {**_INT, "default": 3},
                                   "keyword_query": {"type": "string", "maxLength": 200}}, ("query",)), False),
    "fetch_brokerage_context": (t.fetch_brokerage_context, True, "Brokerage logs linked from errorDialog, "
                                "the brokerage documentation and a summary of the candidate funnel "
                                "(site/includedSite).", _schema(), True),
    "fetch_cli_options": (t.fetch_cli_options, False, "The --help text of prun or pathena.",
                          _schema({"component": {"enum": ["prun", "pathena"]}}, ("component",)), False),
    "find_similar_successful_tasks": (t.find_similar_successful_tasks, True, "Finished/done tasks of the same "
                                      "user, processingType, transUses, transHome and architecture modified "
                                      "in the 14 days before this task: {tasks: [{jediTaskID, ...}]}.",
                                      _schema({"n_tasks": {**_INT, "default": 50}}), True),
    "get_failed_job_log_summary": (t.get_failed_job_log_summary, True, "Summary of a failed job's "
                                   "payload.stdout: step markers, last action and timestamp, error lines, "
                                   "last lines.", _schema(), True),
    "compare_failed_vs_successful_job_logs": (t.compare_failed_vs_successful_job_logs, True, "Align a failed "
                                              "job's log against a finished job's log of reference_task_id "
                                              "(e.g. from find_similar_successful_tasks): truncated, "
                                              "suspected_step, step_duration_s, expected_next, failed_tail.",
                                              _schema({"reference_task_id": _INT}, ("reference_task_id",)), True),
    "summarize_job_log": (t.summarize_job_log, False, "The same summary as get_failed_job_log_summary for one "
                          "PandaID.", _schema({"panda_id": _INT}, ("panda_id",)), True),
}


def task_data_tools() -> frozenset[str]:
    """The tools the incident's task dict is injected into."""
    return frozenset(name for name, (_, takes_task, *_rest) in CATALOGUE.items() if takes_task)


def tool_defs(support: t.PandaSupport, task: Mapping[str, Any]) -> list[ToolDef]:
    """The tools usable with `support`: server tools need a configured server, each search tool its index."""
    defs = []
    indexes = {"search_panda_server_source": support.source, "search_panda_docs": support.docs}
    for name, (handler, takes_task, description, schema, needs_server) in CATALOGUE.items():
        if needs_server and support.client is None:
            continue
        index = indexes.get(name)
        if name in indexes and (index is None or not index.available()):
            continue
        bound = functools.partial(handler, support, dict(task)) if takes_task else functools.partial(handler, support)
        defs.append(ToolDef(name, description, schema, bound, read_only=True))
    return defs


def panda_client(support: t.PandaSupport, task: Mapping[str, Any]) -> BuiltinMcpClient:
    return BuiltinMcpClient(tool_defs(support, task), name=SERVER)
