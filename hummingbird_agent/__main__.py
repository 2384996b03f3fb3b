"""`python -m hummingbird_agent` entry point."""

from hummingbird_agent.cli import main

raise SystemExit(main())
