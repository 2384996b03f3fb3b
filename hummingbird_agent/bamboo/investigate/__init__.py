"""Investigate: human-reviewed investigation sessions over the tool catalogue that teach the knowledge base."""

from hummingbird_agent.bamboo.investigate.engine import Investigator, Tally, TurnResult
from hummingbird_agent.bamboo.investigate.planner import InvestigationError
from hummingbird_agent.bamboo.investigate.session import InvestigationKit
from hummingbird_agent.bamboo.investigate.state import InvestigationState

__all__ = ["InvestigationError", "InvestigationKit", "InvestigationState", "Investigator", "Tally", "TurnResult"]
