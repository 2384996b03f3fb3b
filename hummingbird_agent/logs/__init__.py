"""Build-log failure localisation: the few lines of a (possibly huge) log that explain a failure."""

from hummingbird_agent.logs.clean import clean_line
from hummingbird_agent.logs.command import excerpt_command
from hummingbird_agent.logs.excerpt import Excerpt, format_excerpt
from hummingbird_agent.logs.learn import Example, ExamplesError, parse_examples
from hummingbird_agent.logs.modes import excerpt_lines
from hummingbird_agent.logs.signature import signature

__all__ = [
    "Example",
    "Excerpt",
    "ExamplesError",
    "clean_line",
    "excerpt_command",
    "excerpt_lines",
    "format_excerpt",
    "parse_examples",
    "signature",
]
