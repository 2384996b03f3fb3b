"""Command-line parsing. Each subcommand calls exactly one function elsewhere; nothing else happens here."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

from hummingbird_agent import __version__
from hummingbird_agent.errors import AgentError

Command = Callable[[argparse.Namespace], int]


def _config_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", default=None, metavar="PATH", help="config file (default: $HUMMINGBIRD_CONFIG or ./config.yaml)"
    )


def _cmd_check_config(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.commands import check_config

    return check_config(args.config, args.role)


def _cmd_serve(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.commands import serve

    return serve(args.config, args.role, args.port)


def _cmd_run(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.commands import run_workflow

    return run_workflow(args)


def _cmd_excerpt(args: argparse.Namespace) -> int:
    from hummingbird_agent.logs import excerpt_command

    return excerpt_command(args.fail_log, args.passing, args.examples, args.max_lines, args.json)


def _cmd_bamboo(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.commands import bamboo

    return bamboo(args)


def _cmd_queue(args: argparse.Namespace) -> int:
    from hummingbird_agent.cli.commands import queue

    return queue(args)


def _positive_int(text: str) -> int:
    """A count given on the command line: a whole number of at least 1 (0 or -3 would silently show nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text[:20]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_queue(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("queue", help="inspect the event queues, redrive dead letters, purge")
    qsub = p.add_subparsers(dest="queue_command", metavar="COMMAND", required=True)
    names = ["ingress", "work", "ingress-dlq", "work-dlq"]
    stats = qsub.add_parser("stats", help="depth, in flight, delayed and oldest age per queue")
    peek = qsub.add_parser("peek", help="what waits in a queue: event kind, project, MR, group, receives")
    peek.add_argument("queue", nargs="?", default="work-dlq", choices=names, help="default: work-dlq")
    peek.add_argument("--max", type=_positive_int, default=None, metavar="N", help="at most N messages")
    peek.add_argument("--force", action="store_true",
                      help="SQS: peek a queue with a RedrivePolicy although each peek counts toward maxReceiveCount")
    redrive = qsub.add_parser("redrive", help="move dead-lettered messages back to their source queue")
    redrive.add_argument("source", nargs="?", default="work", choices=["ingress", "work"], help="default: work")
    redrive.add_argument("--id", action="append", default=[], metavar="MESSAGE_ID", help="only these (repeatable)")
    purge = qsub.add_parser("purge", help="delete every message in a queue (asks first)")
    purge.add_argument("queue", choices=names)
    purge.add_argument("--yes", action="store_true", help="do not ask (scripts)")
    for q in (stats, peek, redrive, purge):
        _config_arg(q)
    for q in (stats, peek):
        q.add_argument("--json", action="store_true", help="one JSON array")
    p.set_defaults(func=_cmd_queue)


def _role_arg(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--role", choices=["router", "worker", "ingress", "all"], default="all", help=help_text)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the service (router, worker, webhook ingress)")
    _config_arg(p)
    _role_arg(p, "what to run")
    p.add_argument("--port", type=int, default=None, metavar="N",
                   help="HTTP port of this process (health, /metrics, webhook); overrides webhook.port, so that "
                        "roles sharing a host do not collide")
    p.set_defaults(func=_cmd_serve)


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run one workflow once against one merge request")
    _config_arg(p)
    p.add_argument("workflow", help="workflow name from config.yaml")
    p.add_argument("--project", required=True, help="project path or id, e.g. group/project")
    p.add_argument("--mr", required=True, type=int, help="merge request IID")
    p.add_argument("--pipeline", type=int, default=None, help="pipeline id (analyze-failures)")
    p.add_argument("--save-session", default=None, metavar="DIR", help="save the session there")
    p.add_argument("--resume", default=None, metavar="DIR", help="resume a session saved with --save-session")
    p.add_argument("--message", default=None,
                   help="with --resume: the user's reply; for a bamboo-diagnose workflow: what to look at")
    p.add_argument("--post", action="store_true", help="post the result to the MR (default: print only)")
    p.set_defaults(func=_cmd_run)


def _add_excerpt(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("excerpt", help="find the lines of a build log that explain its failure")
    p.add_argument("fail_log", metavar="FAIL_LOG", help="the failed job's log (plain or .gz)")
    p.add_argument("--passing", default=None, metavar="PASS_LOG", help="a passing run of the same job")
    p.add_argument("--examples", default=None, metavar="EXAMPLES.jsonl", help="failure chunks of earlier logs")
    p.add_argument("--max-lines", type=int, default=None, metavar="N", help="at most N lines in the excerpt")
    p.add_argument("--json", action="store_true", help='print {"ranges": [[a, b], ...], "lines": N}')
    p.set_defaults(func=_cmd_excerpt)


def _add_bamboo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bamboo", help="knowledge base: learn from resolved failures, diagnose new ones")
    bsub = p.add_subparsers(dest="bamboo_command", metavar="COMMAND", required=True)
    pop = bsub.add_parser("populate", help="learn incidents from a JSONL file")
    _config_arg(pop)
    pop.add_argument("file", metavar="FILE.jsonl")
    pop.add_argument("--dry-run", action="store_true", help="extract and review, write nothing")
    pop.add_argument("--max-retries", type=int, default=None, metavar="N", help="reviewer retry limit for this run")
    pop.add_argument("--show", action="store_true", help="print what each incident adds (with --dry-run: would add)")
    pop.add_argument("--strategy", default=None, metavar="NAME",
                     help="extraction strategy for this run (gitlab_ci, panda); default bamboo.extraction_strategy")
    for kind, what in (("docs", "PanDA documentation (.md .rst .txt .html)"), ("source", "PanDA source (.py)")):
        index = bsub.add_parser(f"index-{kind}", help=f"index a folder of {what} for the panda tools, offline")
        _config_arg(index)
        index.add_argument("dir", metavar="DIR")
    stats = bsub.add_parser("stats", help="counts per node and edge type, top causes")
    _config_arg(stats)
    analyze = bsub.add_parser("analyze", help="diagnose incidents (progress on stderr when several)")
    _config_arg(analyze)
    analyze.add_argument("incident", metavar="INCIDENT.json", nargs="+")
    analyze.add_argument("--json", action="store_true", help="print the AnalysisResult as JSON")
    _add_bamboo_upkeep(bsub)
    inv = bsub.add_parser("investigate", help="an interactive, human-reviewed investigation (one prompt per turn)")
    _config_arg(inv)
    inv.add_argument("question")
    inv.add_argument("--project", default=None, help="project path the investigation is about")
    inv.add_argument("--mr", type=int, default=None, help="merge request iid (with --project)")
    inv.add_argument("--incident", default=None, metavar="FILE", help="an incident file (as for analyze) instead")
    p.set_defaults(func=_cmd_bamboo)


def _add_bamboo_upkeep(bsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`bamboo incidents`, `backup`, `restore`, `reindex`: curating and keeping the knowledge base."""
    inc = bsub.add_parser("incidents", help="list, show or remove learned incidents")
    isub = inc.add_subparsers(dest="incidents_command", metavar="ACTION", required=True)
    _config_arg(isub.add_parser("list", help="every learned incident with its causes"))
    for action, what in (("show", "what one incident contributed"),
                         ("remove", "withdraw one incident: its nodes, edges and vectors no other incident shares")):
        one = isub.add_parser(action, help=what)
        _config_arg(one)
        one.add_argument("incident_id", metavar="INCIDENT_ID")
    for action, what in (("backup", "copy the embedded stores into DIR (the service stopped)"),
                         ("restore", "replace the embedded stores with the backup in DIR (the service stopped)")):
        one = bsub.add_parser(action, help=what)
        _config_arg(one)
        one.add_argument("dir", metavar="DIR")
    _config_arg(bsub.add_parser("reindex", help="re-embed every vector point with the configured embedder"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hummingbird-agent", description="LLM agent service for GitLab CI.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_serve(sub)
    _add_run(sub)
    check = sub.add_parser("check-config", help="validate config.yaml and summarise it")
    _config_arg(check)
    _role_arg(check, "also check what `serve --role ROLE` needs (the sqs queue URLs)")
    check.set_defaults(func=_cmd_check_config)
    _add_excerpt(sub)
    _add_bamboo(sub)
    _add_queue(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`check-config | head -1`): stop quietly, as a tool stopped by SIGPIPE does, and
        # point stdout at /dev/null so the interpreter's final flush does not report the pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    func: Command = args.func
    try:
        return func(args)
    except BrokenPipeError:
        raise
    except AgentError as exc:
        # Expected failures (bad config, bad input) are one line, never a traceback.
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # top of main: the last boundary; log the bug with its traceback
        logging.getLogger(__name__).exception("unexpected error in %s", args.command)
        return 1
