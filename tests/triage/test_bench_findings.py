"""Defects the triage benchmark (bench/triage.py) found on the development logs, each reduced to a small CI
history (each failed before its fix)."""

from __future__ import annotations

from hummingbird_agent.triage.model import NOT_YOURS, Verdict
from tests.triage.conftest import GENERIC_LOG, run_triage
from tests.triage.world import Attempt, CiWorld, sha_of

BASE = sha_of("base")
# What every Travis job prints while it sets up (`sudo -V`): benign lines with a weaker failure word in them.
SETUP = "\n".join(["$ sudo -V", "Sudo version 1.8.16",
                   "Allow some information gathering to give useful error messages",
                   "Authentication timestamp timeout: 15.0 minutes", "Password prompt timeout: 0.0 minutes",
                   "Number of tries to enter a password: 3"])
HANG = "ERROR: Job failed: execution took longer than 1h0m0s seconds"


def _mr(world: CiWorld, *attempts: Attempt) -> int:
    mr = world.mr(1, base_sha=BASE)
    return world.pipeline(mr["sha"], attempts, ref="feature", source="merge_request_event")


async def test_set_up_lines_every_run_prints_do_not_make_two_hangs_the_same_failure(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("unit-tests", trace=f"{SETUP}\nResolving dependencies of project.clj\n{HANG}",
                                  failure_reason="job_execution_timeout")])
    _mr(world, Attempt("unit-tests", trace=f"{SETUP}\nReading package lists... Done\n{HANG}",
                       failure_reason="job_execution_timeout"))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict not in NOT_YOURS


async def test_a_generic_failure_on_the_target_branch_is_not_called_different(world: CiWorld) -> None:
    world.pipeline(sha_of("later"), [Attempt("lint", trace=GENERIC_LOG)], updated_at="2026-01-05T08:00:00.000Z")
    _mr(world, Attempt("lint", trace=GENERIC_LOG))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.UNCLASSIFIED


def _proofer(*links: str) -> str:
    lines = ["$ bundle exec htmlproofer ./_site --check-html", "Running [LinkCheck] on ./_site on *.html...",
             "Ran on 812 files!"]
    for link in links:
        lines += ["- ./_site/patterns/index.html", f"  *  External link {link} failed: 404 No error"]
    return "\n".join([*lines, f"htmlproofer 3.0.6 | Error:  HTML-Proofer found {len(links)} failures!",
                      'The command "htmlproofer" exited with 1.'])


async def test_a_summary_count_does_not_make_an_added_failure_pre_existing(world: CiWorld) -> None:
    world.pipeline(BASE, [Attempt("pages", trace=_proofer("http://a.example/x.pdf", "http://b.example/y"))])
    _mr(world, Attempt("pages", trace=_proofer("http://a.example/x.pdf", "http://b.example/y",
                                               "http://mr.example/new-link")))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict != Verdict.PRE_EXISTING


async def test_the_mr_failure_shown_on_the_base_before_a_later_failure_is_pre_existing(world: CiWorld) -> None:
    failure = "$ make test\ntext-objects/lexer                                FAIL\nmake: *** [test] Error 1"
    later = ("$ wget http://www.inf.puc-rio.br/lpeg.tar.gz\nResolving www.inf.puc-rio.br... failed: Name or service "
             "not known.\nwget: unable to resolve host address 'www.inf.puc-rio.br'\nmake: *** [deps] Error 4")
    between = "\n".join(f"CC src/module{n}.c" for n in range(200))
    world.pipeline(BASE, [Attempt("test", trace=f"{failure}\n{between}\n{later}\n")])
    _mr(world, Attempt("test", trace=f"{failure}\n"))
    (check,) = (await run_triage(world.gl, 1))[0].checks
    assert check.verdict == Verdict.PRE_EXISTING
