"""Bamboo knowledge base: incident graph model, extraction strategies, reviewer, accumulator, stores."""

from hummingbird_agent.bamboo.accumulator import (
    AccumulationResult,
    Enricher,
    Enrichment,
    KnowledgeAccumulator,
    NoEnricher,
    Stores,
)
from hummingbird_agent.bamboo.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.llm import JsonLLM, ModelReplyError, ModelText, TextModel
from hummingbird_agent.bamboo.model import (
    SCHEMA,
    Edge,
    ExtractedKnowledge,
    Insight,
    KnowledgeGraph,
    Node,
    NodeType,
    RelType,
    make_node,
    node_id,
)
from hummingbird_agent.bamboo.reviewer import KnowledgeReviewer, ReviewResult, ToolInfo
from hummingbird_agent.bamboo.strategies.base import (
    ExtractionStrategy,
    IncidentInput,
    StrategyDeps,
    StrategyRegistry,
    default_registry,
)

__all__ = [
    "SCHEMA",
    "AccumulationResult",
    "Edge",
    "Enricher",
    "Enrichment",
    "ExtractedKnowledge",
    "ExtractionStrategy",
    "IncidentInput",
    "Insight",
    "JsonLLM",
    "KnowledgeAccumulator",
    "KnowledgeGraph",
    "KnowledgeGraphExtractor",
    "KnowledgeReviewer",
    "ModelReplyError",
    "ModelText",
    "Node",
    "NodeType",
    "NoEnricher",
    "RelType",
    "ReviewResult",
    "Stores",
    "StrategyDeps",
    "StrategyRegistry",
    "TextModel",
    "ToolInfo",
    "default_registry",
    "make_node",
    "node_id",
]
