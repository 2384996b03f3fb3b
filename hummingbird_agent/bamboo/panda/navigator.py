"""The panda strategy's source navigator: questions about the PanDA server/JEDI source answered from the offline
source index (`bamboo index-source DIR`), the best chunks with their path and line. No LLM call, no download."""

from __future__ import annotations

import asyncio

from hummingbird_agent import budgets
from hummingbird_agent.bamboo.panda.index import PandaIndex


class PandaSourceNavigator:
    """SourceNavigator over a built source index; ConfigError (an AgentError) when the index cannot be read."""

    def __init__(self, index: PandaIndex, max_hits: int = budgets.PANDA_HINT_SOURCES) -> None:
        self._index, self._max_hits = index, max_hits

    async def navigate(self, question: str) -> str:
        hits = await asyncio.to_thread(self._index.search, question, self._max_hits)
        return "\n\n".join(f"{h['path']}:{h['line']}\n{h['snippet']}" for h in hits if h["score"] > 0)
