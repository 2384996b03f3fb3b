"""The `excerpt` command: print the failure excerpt of a log, as numbered text or as JSON."""

from __future__ import annotations

import json
import sys
import zlib

from hummingbird_agent.logs.excerpt import Excerpt, format_excerpt
from hummingbird_agent.logs.learn import Example, ExamplesError, parse_examples
from hummingbird_agent.logs.modes import excerpt_lines


def _read_examples(path: str) -> list[Example]:
    with open(path, encoding="utf-8") as handle:
        return parse_examples(handle)


def _fail(message: str) -> int:
    """One line on stderr, prefixed `error:` as every command's errors are (cli.main); exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def excerpt_command(
    fail_log: str, passing: str | None, examples: str | None, max_lines: int | None, as_json: bool
) -> int:
    """Run the command; 0 when an excerpt was printed, 2 (one line on stderr) for unusable input."""
    if max_lines is not None and max_lines < 1:
        return _fail("--max-lines must be at least 1")
    try:
        records = _read_examples(examples) if examples else None
        result: Excerpt = excerpt_lines(fail_log, passing=passing, examples=records, max_lines=max_lines)
    except ExamplesError as exc:
        return _fail(f"{examples}: {exc}")
    except UnicodeDecodeError:
        return _fail(f"{examples}: examples file is not UTF-8 text")
    except OSError as exc:
        return _fail(f"{exc.filename or fail_log}: {exc.strerror or exc}")
    except (EOFError, zlib.error) as exc:
        return _fail(f"corrupt gzip input ({exc})")
    if as_json:
        print(json.dumps(result.to_json()))
    else:
        print(format_excerpt(result))
    return 0
