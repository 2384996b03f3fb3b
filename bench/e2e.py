"""End-to-end service benchmark: webhook -> placeholder latency and note throughput of one worker.

Latency is probed one event at a time on an idle service; throughput with RUNS events sent at once.
Single-machine mode (webhook ingress, embedded queue, local sessions) against the fake GitLab, with the
packaged scripted model answering every turn after MODEL_LATENCY_S (provider SDK cost is not counted).
Each run is TURNS model turns (a sandbox command, tool calls, then the note),
so every run starts a Podman sandbox (the worker's warm pool hands it one ready, or it starts its own).

Ideal concurrency: CONCURRENCY runs at once each take as long as one run alone. The ideal throughput is CONCURRENCY
/ single_run_s, where single_run_s is the median webhook -> final note time of the latency probes (one run at a time
on the otherwise idle service, measured in the same run, sandbox included); `efficiency_vs_ideal` is the measured
throughput of RUNS events sent at once divided by it, so it shows how much concurrent runs wait on each other
(podman, the worker, the machine's CPU), not what one run costs. `efficiency_vs_model_bound` divides by CONCURRENCY
/ (TURNS * MODEL_LATENCY_S) instead: the bound if a run cost nothing but its model turns (no sandbox, no GitLab, no
queue). `cpu_bound_vs_ideal` is the most any scheduling could reach on this machine: every process's CPU time per
run (podman, conmon and the runtime included, from /proc/stat over the one-at-a-time probes) lets at most cores /
cpu_per_run runs finish a second; divided by the ideal throughput. Other work on the machine counts against it, so
read it with `load_1m`. `tree_cpu_s_per_run` is the CPU of the service and of every process it started (podman,
conmon, the OCI runtime: conmon's orphans are reparented to this process and reaped here) over the same probes: what
a run costs whatever else the machine runs. The probes start after one unmeasured run, which fills the warm pool
(once a worker): in them each run takes a ready box and the pool starts one in its place, so a run's figures count
one box's start and removal. `bench_cpu_s_per_run` is this process's share of `machine_cpu_s_per_run` over the same
probes: the fake GitLab, the scripted model and the note watcher. `execs_per_run` counts the programs started on the
machine during the probes by name (podman, conmon, runc; root only, from the kernel's process events).

`--baseline REV` runs the same bench on the service of git revision REV first (extracted with `git archive`; it
uses the same sandbox image), then this checkout's, `--rounds` times alternating; the figures are medians over the
rounds, each round's under `rounds_ours` / `rounds_baseline`, the baseline's medians under `baseline`.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.proc_watch import ExecCounter, become_subreaper, reap_orphans, tree_cpu_seconds  # noqa: E402
from tests.runner.harness import PROJECT, PROJECT_ID, pipeline_event, seed_gitlab  # noqa: E402
from tests.servers import GitLabServer  # noqa: E402

RUNS = 60
CONCURRENCY = 10
MODEL_LATENCY_S = 0.2
# Seed §11.4: a typical cold start is about 8 iterations.
TURNS = 8
LATENCY_PROBES = 10
WARMUP_IID = LATENCY_PROBES + RUNS + 1  # the MR of the run before the window
SECRET = "bench-hook-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_script(directory: Path) -> Path:
    """Every run replays the same TURNS turns: a command in the run's sandbox (so every run starts one, as a
    real analysis does), tool calls, then the note."""
    call = {"name": "gitlab_get_mr_details", "args": {"project": PROJECT, "mr_iid": 1}}
    command = {"name": "sandbox_exec", "args": {"command": "ls -la"}}
    turns = [{"calls": [command]}] + [{"calls": [call]}] * (TURNS - 2) + [{"text": "## Analysis\nbench"}]
    path = directory / "turns.json"
    path.write_text(json.dumps({"latency_s": MODEL_LATENCY_S, "per_conversation": True, "turns": turns}))
    return path


def write_config(directory: Path, gitlab: GitLabServer, port: int) -> Path:
    config: dict[str, Any] = {
        "gitlab": {"url": gitlab.url, "token_env": "HB_BOT_TOKEN"},
        "model": {"provider": "scripted", "script": write_script(directory).name},
        "queues": {"backend": "embedded", "embedded_path": "queue.sqlite", "max_concurrent_agents": CONCURRENCY,
                   "wait_time_s": 1},
        "webhook": {"enabled": True, "host": "127.0.0.1", "port": port, "secret_env": "HOOK_SECRET"},
        "sessions": {"backend": "local", "directory": "sessions"},
        "workflows": {"analyze-failures": {
            "description": "bench", "prompt": str(REPO / "workflows/analyze-failures.md"), "triggers": ["pipeline"],
            "data_sources": {"gitlab": {"token_env": "GITLAB_READ_TOKEN"}},
            "projects": {PROJECT: {"max_runs_per_mr": 5}},
        }},
    }
    path = directory / "config.yaml"
    path.write_text(json.dumps(config))
    return path


def watch_notes(gitlab: GitLabServer, stop: threading.Event, seen: dict[int, dict[str, float]]) -> None:
    """Record when each MR first shows a placeholder and a final note (5 ms resolution)."""
    while not stop.is_set():
        now = time.monotonic()
        for (_, iid), discussions in list(gitlab.discussions.items()):
            for discussion in list(discussions):
                body = discussion["notes"][0]["body"]
                times = seen.setdefault(iid, {})
                times.setdefault("placeholder", now)
                if not body.startswith("Running the workflow"):
                    times.setdefault("final", now)
        time.sleep(0.005)


def drive(config_path: Path, port: int, gitlab: GitLabServer, service_dir: Path, execs: ExecCounter,
          ) -> dict[str, float]:
    """The service (the checkout in `service_dir`) runs in its own process, as in production; the fakes and the
    clock stay here. BENCH_LOG (file) and BENCH_LOG_LEVEL capture its log; BENCH_PROFILE writes a cProfile of it."""
    env = {**os.environ, "HB_BOT_TOKEN": gitlab.bot_token,
           "GITLAB_READ_TOKEN": gitlab.read_token, "HOOK_SECRET": SECRET,
           "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING")}
    profile = ["-m", "cProfile", "-o", os.environ["BENCH_PROFILE"]] if os.environ.get("BENCH_PROFILE") else []
    cmd = [sys.executable, *profile, "-m", "hummingbird_agent", "serve", "--config", str(config_path)]
    log_file = open(os.environ.get("BENCH_LOG", os.devnull), "w")  # noqa: SIM115 - closed below
    service = subprocess.Popen(cmd, cwd=service_dir, env=env, stderr=log_file)
    stop_reaping = threading.Event()
    threading.Thread(target=reap_while, args=(service.pid, stop_reaping), daemon=True).start()
    try:
        wait_ready(f"http://127.0.0.1:{port}/readyz")
        url = f"http://127.0.0.1:{port}/webhook"
        # One run before the window: the warm pool's first fill (SANDBOX_WARM_POOL_SIZE boxes, once a worker) is
        # not a run's cost; in the window each run takes a ready box and the pool starts one in its place.
        probe_latency(url, gitlab, [WARMUP_IID])
        time.sleep(3.0)  # the pool's fill ends before the window opens
        machine_before, tree_before = machine_busy_seconds(), tree_cpu_seconds(service.pid)
        bench_before = cpu_seconds(os.getpid())  # the fake GitLab, the scripted model, the watcher
        execs.counts.clear()
        execs.counting = True
        latencies, singles = probe_latency(url, gitlab, list(range(1, LATENCY_PROBES + 1)))
        execs.counting = False
        time.sleep(1.0)  # the last probe's box is removed in the background: let its conmon end and be reaped
        reap_orphans(service.pid)
        figures = {"machine_cpu_s_per_run": (machine_busy_seconds() - machine_before) / LATENCY_PROBES,
                   "tree_cpu_s_per_run": (tree_cpu_seconds(service.pid) - tree_before) / LATENCY_PROBES,
                   "bench_cpu_s_per_run": (cpu_seconds(os.getpid()) - bench_before) / LATENCY_PROBES}
        for name in ("podman", "conmon", "runc"):
            figures[f"{name}_execs_per_run"] = execs.counts[name] / LATENCY_PROBES
        before = cpu_seconds(service.pid)
        figures.update(send_and_watch(url, gitlab, first_iid=LATENCY_PROBES + 1))
        figures["service_cpu_s"] = cpu_seconds(service.pid) - before
        figures["p50"] = statistics.median(latencies)
        figures["p99"] = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        figures["single_run_s"] = statistics.median(singles)
        return figures
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(60)
        stop_reaping.set()
        log_file.close()


def reap_while(service_pid: int, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        reap_orphans(service_pid)


def post_event(session: requests.Session, url: str, iid: int) -> None:
    body = pipeline_event(pipeline_id=1000 + iid, sha=f"{iid:040x}")
    body["merge_request"]["iid"] = iid
    session.post(url, json=body, headers={"X-Gitlab-Token": SECRET, "X-Gitlab-Event": "Pipeline Hook"},
                 timeout=10).raise_for_status()


def wait_notes(seen: dict[int, dict[str, float]], key: str, iids: list[int], started: float) -> None:
    while not all(key in seen.get(iid, {}) for iid in iids):
        if time.monotonic() - started > 300:
            raise SystemExit("bench timed out")
        time.sleep(0.005)


def probe_latency(url: str, gitlab: GitLabServer, iids: list[int]) -> tuple[list[float], list[float]]:
    """One event at a time on an idle service, each run's note final before the next: webhook -> placeholder
    (ms) and webhook -> final note (s, one run alone)."""
    seen: dict[int, dict[str, float]] = {}
    stop = threading.Event()
    threading.Thread(target=watch_notes, args=(gitlab, stop, seen), daemon=True).start()
    session, latencies, singles = requests.Session(), [], []
    for iid in iids:
        sent = time.monotonic()
        post_event(session, url, iid)
        wait_notes(seen, "final", [iid], sent)
        latencies.append((seen[iid]["placeholder"] - sent) * 1000)
        singles.append(seen[iid]["final"] - sent)
    stop.set()
    return sorted(latencies), singles


def send_and_watch(url: str, gitlab: GitLabServer, first_iid: int) -> dict[str, float]:
    """Throughput: RUNS events sent at once; elapsed until the last note is final."""
    seen: dict[int, dict[str, float]] = {}
    watcher_stop = threading.Event()
    threading.Thread(target=watch_notes, args=(gitlab, watcher_stop, seen), daemon=True).start()
    session = requests.Session()
    started = time.monotonic()
    for iid in range(first_iid, first_iid + RUNS):
        post_event(session, url, iid)
    wait_notes(seen, "final", list(range(first_iid, first_iid + RUNS)), started)
    watcher_stop.set()
    mine = [s["final"] for iid, s in seen.items() if iid >= first_iid]
    return {"elapsed_s": max(mine) - started}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time every process of the machine has used (all cores, idle and I/O wait left out), from /proc/stat."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def wait_ready(url: str) -> None:
    for _ in range(400):
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise SystemExit("service did not become ready")


def run_once(service_dir: Path, execs: ExecCounter) -> dict[str, float]:
    """One bench of the service in `service_dir`: its figures, rounded."""
    with tempfile.TemporaryDirectory() as tmp, GitLabServer() as gitlab:
        seed_gitlab(gitlab)
        for iid in range(1, WARMUP_IID + 1):
            gitlab.add_mr(PROJECT_ID, iid, sha=f"{iid:040x}")
        port = free_port()
        figures = drive(write_config(Path(tmp), gitlab, port), port, gitlab, service_dir, execs)
    ideal_per_s = CONCURRENCY / figures["single_run_s"]
    model_bound_per_s = CONCURRENCY / (TURNS * MODEL_LATENCY_S)
    measured_per_s = RUNS / figures["elapsed_s"]
    cpu_bound_per_s = (os.cpu_count() or 1) / figures["machine_cpu_s_per_run"]
    counted = {k: round(v, 1) for k, v in figures.items() if k.endswith("_execs_per_run")}
    return {
        "placeholder_p50_ms": round(figures["p50"], 1),
        "placeholder_p99_ms": round(figures["p99"], 1),
        "efficiency_vs_ideal": round(measured_per_s / ideal_per_s, 3),
        "efficiency_vs_model_bound": round(measured_per_s / model_bound_per_s, 3),
        "notes_per_s": round(measured_per_s, 2),
        "single_run_s": round(figures["single_run_s"], 2),
        "service_cpu_ms_per_run": round(figures["service_cpu_s"] * 1000 / RUNS, 1),
        "ideal_notes_per_s": round(ideal_per_s, 2),
        "machine_cpu_s_per_run": round(figures["machine_cpu_s_per_run"], 3),
        "tree_cpu_s_per_run": round(figures["tree_cpu_s_per_run"], 3),
        "bench_cpu_s_per_run": round(figures["bench_cpu_s_per_run"], 3),
        "cpu_bound_vs_ideal": round(cpu_bound_per_s / ideal_per_s, 3),
        **counted,
        "load_1m": round(os.getloadavg()[0], 2),
    }


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(statistics.median(r[k] for r in rounds), 3) for k in rounds[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", help="git revision whose service is benched too, alternating with ours")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    become_subreaper()
    execs = ExecCounter()
    counting = execs.start()
    ours: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as old_tree:
        if args.baseline:
            archive = subprocess.run(["git", "archive", args.baseline], cwd=REPO, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", old_tree], input=archive.stdout, check=True)
        for _ in range(args.rounds):
            if args.baseline:
                baseline.append(run_once(Path(old_tree), execs))
            ours.append(run_once(REPO, execs))
    result: dict[str, Any] = {**medians(ours), "rounds": args.rounds, "execs_counted": counting,
                              "rounds_ours": ours}
    if baseline:
        result |= {"baseline": medians(baseline), "baseline_rev": args.baseline, "rounds_baseline": baseline}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
