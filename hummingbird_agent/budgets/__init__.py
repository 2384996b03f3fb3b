"""Every limit of the service in one place.

Each constant carries its unit in its name and a comment saying why it has its value and which other
constants it must stay consistent with. Components import from here (`budgets.NAME`); nothing else defines a
limit. The service's own limits are in `service.py` and `transport.py` (the event transport), the knowledge base's
in `knowledge.py`, the failure triage's in `triage.py`.
"""

from hummingbird_agent.budgets.knowledge import *  # noqa: F403
from hummingbird_agent.budgets.service import *  # noqa: F403
from hummingbird_agent.budgets.transport import *  # noqa: F403
from hummingbird_agent.budgets.triage import *  # noqa: F403
