"""The panda strategy's 14 read-only tools (reference: Bamboo's PandaMcpClient). Handlers taking `task`
get the incident's PanDA task dict bound in by the catalogue (the model never passes it); the others take
only the model's arguments. Every PanDA read goes through the PanDA adapter; search tools read the
offline indexes."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.panda import logs as panda_logs
from hummingbird_agent.bamboo.panda.index import PandaIndex
from hummingbird_agent.data_sources.panda import PandaClient, PandaNotFound

Task = Mapping[str, Any]
_HREF = re.compile(r"""<a\s[^>]*href\s*=\s*["']([^"']+)["']""", re.I)
_FAILED = frozenset({"failed", "cancelled", "closed"})
_SIMILAR_KEYS = ("userName", "processingType", "transUses", "transHome", "architecture")
_JOB_FIELDS = ("PandaID", "computingSite", "jobStatus", "pilotErrorCode", "pilotErrorDiag", "transExitCode",
               "processingType", "cpuConsumptionTime", "wallTime", "jobDuration", "extendedProdSourceLabel",
               "maxPSS", "actualCoreCount", "memory_leak")
_FUNNEL = re.compile(r"(?i)(\d+)\s+candidates?\s+(?:passed|remain|left)|skip\s+site=?(\S+)|"
                     r"no candidates|candidate\s+(\S+)\s+(?:passed|selected)")


@dataclass(frozen=True, slots=True)
class PandaSupport:
    """What the tools and prefetch hints use: the adapter (None without a configured server), the two
    offline indexes, and the folder of CLI help texts (`prun.txt`, `pathena.txt`)."""

    client: PandaClient | None
    docs: PandaIndex | None = None
    source: PandaIndex | None = None
    cli_help_dir: Path | None = None


def task_id(task: Task) -> int | None:
    try:
        return int(task["jediTaskID"])
    except (KeyError, TypeError, ValueError):
        return None


def links(error_dialog: str) -> list[str]:
    return list(dict.fromkeys(html.unescape(u) for u in _HREF.findall(error_dialog or "")))


def _compact_task(task: Task) -> dict[str, Any]:
    return {"jediTaskID": task.get("jediTaskID"), "status": task.get("status"),
            "errorDialog": str(task.get("errorDialog") or "")[: budgets.PANDA_ERROR_DIALOG_CHARS],
            "retryID": task.get("retryID"), "transUses": task.get("transUses")}


def _compact_job(job: Mapping[str, Any]) -> dict[str, Any]:
    return {k: job.get(k) for k in _JOB_FIELDS if k in job}


def _failed(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [j for j in jobs if str(j.get("jobStatus")) in _FAILED]


# --- task and job tools ---------------------------------------------------------------------------------
def fetch_linked_log_files(support: PandaSupport, task: Task) -> dict[str, str]:
    found: dict[str, str] = {}
    for url in links(str(task.get("errorDialog") or ""))[: budgets.PANDA_LINKED_LOGS]:
        try:
            found[url] = _need(support).text(url, "linked log", budgets.PANDA_LINKED_LOG_CHARS)
        except PandaNotFound as exc:
            found[url] = f"unavailable: {exc}"
    return found


def get_parent_task(support: PandaSupport, retry_id: int) -> dict[str, Any] | None:
    try:
        return _need(support).task(retry_id)
    except PandaNotFound:
        return None


def get_retry_chain(support: PandaSupport, task: Task, max_depth: int = 3) -> list[dict[str, Any]]:
    chain: list[dict[str, Any]] = []
    seen = {task_id(task)}
    parent = task_id({"jediTaskID": task.get("retryID")})
    for _ in range(max(0, min(int(max_depth), budgets.PANDA_RETRY_CHAIN_MAX_DEPTH))):
        if not parent or parent in seen:
            break
        found = get_parent_task(support, parent)
        if found is None:
            break
        seen.add(task_id(found))
        chain.append(_compact_task(found))
        parent = task_id({"jediTaskID": found.get("retryID")})
    return chain


def get_task_jobs_summary(support: PandaSupport, task: Task) -> dict[str, Any]:
    tid = task_id(task)
    if tid is None:
        return {"error": "the task has no jediTaskID"}
    jobs = _need(support).task_jobs(tid)
    failed = _failed(jobs)
    diags = Counter(str(j.get("pilotErrorDiag") or j.get("transExitCode") or "unknown")[:300] for j in failed)
    return {"status_counts": dict(Counter(str(j.get("jobStatus")) for j in jobs)),
            "top_errors": [{"diag": d, "count": c} for d, c in diags.most_common(budgets.PANDA_TOP_ERRORS)],
            "failed_job_ids": [j.get("PandaID") for j in failed][: budgets.PANDA_FAILED_JOB_IDS]}


def get_scout_job_details(support: PandaSupport, task: Task, max_jobs: int = 5) -> list[dict[str, Any]]:
    tid = task_id(task)
    if tid is None:
        return []
    jobs = _need(support).task_jobs(tid)
    scouts = [j for j in jobs if "sj" in str(j.get("specialHandling") or "").split(",")]
    picked, codes = list(scouts), {j.get("pilotErrorCode") for j in scouts}
    for job in _failed(jobs):
        code = job.get("pilotErrorCode")
        if job not in picked and code not in codes:
            codes.add(code)
            picked.append(job)
    return [_compact_job(j) for j in picked[: max(1, min(int(max_jobs), budgets.PANDA_MAX_SCOUT_JOBS))]]


def get_task_input_datasets(support: PandaSupport, task: Task) -> list[dict[str, Any]]:
    tid = task_id(task)
    if tid is None:
        return []
    out = []
    for entry in _need(support).datasets(tid):
        dataset, files = entry.get("dataset") or {}, entry.get("files") or []
        out.append({"name": dataset.get("name"), "id": dataset.get("id"), "files": len(files),
                    "file_status": dict(Counter(str(f.get("status")) for f in files if isinstance(f, dict)))})
    return out


def find_similar_successful_tasks(support: PandaSupport, task: Task, n_tasks: int = 50) -> dict[str, Any]:
    """Finished/done tasks sharing the failed task's user, processing type, release and architecture."""
    stamp = _time(task.get("modificationTime"))
    since = (stamp - timedelta(days=budgets.PANDA_SIMILAR_WINDOW_DAYS) if stamp
             else datetime.now(UTC).replace(tzinfo=None) - timedelta(days=budgets.PANDA_SIMILAR_FALLBACK_DAYS))
    wanted = {k: task[k] for k in _SIMILAR_KEYS if task.get(k) not in (None, "")}
    candidates = _need(support).tasks_since(since.strftime("%Y-%m-%d %H:%M:%S"),
                                            str(task.get("prodSourceLabel") or "user"))
    limit = max(1, min(int(n_tasks), budgets.PANDA_SIMILAR_MAX_TASKS))
    matches = [c for c in candidates[: budgets.PANDA_SIMILAR_MAX_TASKS]
               if str(c.get("status")) in ("finished", "done") and task_id(c) != task_id(task)
               and all(c.get(k) == v for k, v in wanted.items())]
    return {"matched_on": sorted(wanted), "since": since.isoformat(sep=" "),
            "tasks": [{k: c.get(k) for k in ("jediTaskID", "status", "taskName", "modificationTime", *wanted)}
                      for c in matches[:limit]]}


def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("T", " ")) if value else None
    except ValueError:
        return None


# --- job logs -------------------------------------------------------------------------------------------
def _job_with(support: PandaSupport, tid: int, statuses: frozenset[str]) -> dict[str, Any] | None:
    return next((j for j in _need(support).task_jobs(tid) if str(j.get("jobStatus")) in statuses), None)


def get_failed_job_log_summary(support: PandaSupport, task: Task) -> dict[str, Any]:
    tid = task_id(task)
    job = _job_with(support, tid, _FAILED) if tid is not None else None
    if job is None:
        return {"error": "no failed job in this task"}
    return {"PandaID": job.get("PandaID"), **summarize_job_log(support, int(job["PandaID"]))}


def compare_failed_vs_successful_job_logs(support: PandaSupport, task: Task, reference_task_id: int) -> dict[str, Any]:
    tid = task_id(task)
    failed = _job_with(support, tid, _FAILED) if tid is not None else None
    good = _job_with(support, int(reference_task_id), frozenset({"finished"}))
    if failed is None or good is None:
        return {"error": "no failed job in this task" if failed is None
                else f"no finished job in task {reference_task_id}"}
    client = _need(support)
    result = panda_logs.compare(client.job_log(int(failed["PandaID"])), client.job_log(int(good["PandaID"])))
    return {"failed_PandaID": failed.get("PandaID"), "reference_PandaID": good.get("PandaID"), **result}


def summarize_job_log(support: PandaSupport, panda_id: int) -> dict[str, Any]:
    return panda_logs.summarize(_need(support).job_log(int(panda_id)))


# --- documentation, source, brokerage, CLI --------------------------------------------------------------
def search_panda_server_source(support: PandaSupport, query: str, max_results: int = 10) -> list[dict[str, Any]]:
    return _index(support.source, "source").search(query, max_results)


def search_panda_docs(support: PandaSupport, query: str, max_results: int = 3,
                      keyword_query: str = "") -> list[dict[str, Any]]:
    return _index(support.docs, "docs").search(query, max_results, keyword_query)


def fetch_brokerage_context(support: PandaSupport, task: Task) -> dict[str, Any]:
    logs = fetch_linked_log_files(support, task) if support.client else {}
    doc = support.docs.search("brokerage site selection candidates", 1) if support.docs and \
        support.docs.available() else []
    funnel = [m.group(0) for text in logs.values() for m in _FUNNEL.finditer(text)]
    site = task.get("site") or task.get("includedSite")
    summary = "; ".join(funnel[:20]) or "no brokerage funnel lines in the linked logs"
    return {"logs": logs, "brokerage_doc": doc[0]["snippet"] if doc else None,
            "doc_path": doc[0]["path"] if doc else None,
            "summary": f"{summary} (site={site})" if site else summary}


def fetch_cli_options(support: PandaSupport, component: str) -> dict[str, str]:
    path = support.cli_help_dir / f"{component}.txt" if support.cli_help_dir else None
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path else None
    except OSError:
        text = None
    if not text:
        return {component: f"unavailable: no help text for {component} is configured (bamboo.panda.cli_help_dir)"}
    return {component: text[: budgets.PANDA_CLI_HELP_CHARS]}


def _need(support: PandaSupport) -> PandaClient:
    if support.client is None:
        raise PandaNotFound("no PanDA server is configured (bamboo.panda.url)")
    return support.client


def _index(index: PandaIndex | None, kind: str) -> PandaIndex:
    if index is None:
        raise PandaNotFound(f"no PanDA {kind} index (bamboo index-{kind} DIR)")
    return index
