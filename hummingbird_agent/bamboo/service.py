"""Knowledge base in the service and on the command line: build the navigator from config, analyse
one incident file, and learn an MR's last analysed failure (`/hummingbird learn`, learn-on-success).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from hummingbird_agent.bamboo.analysis import AnalysisResult
from hummingbird_agent.bamboo.diagnose.navigator import Explorer, ReasoningNavigator
from hummingbird_agent.bamboo.explore.session import ConfiguredEnricher
from hummingbird_agent.bamboo.factory import (
    TOOLS_COLLECTION_SUFFIX,
    build_explorer,
    build_panda_support,
    build_vector_store,
    strategy_clients,
)
from hummingbird_agent.bamboo.investigate import InvestigationKit
from hummingbird_agent.bamboo.json_llm import JsonLLM, ModelText
from hummingbird_agent.bamboo.learn.extractor import KnowledgeGraphExtractor
from hummingbird_agent.bamboo.learn.incidents import parse_incident
from hummingbird_agent.bamboo.stores.base import Stores
from hummingbird_agent.bamboo.strategies.base import IncidentInput, StrategyDeps, default_registry
from hummingbird_agent.bamboo.workflow_names import DIAGNOSE_WORKFLOW
from hummingbird_agent.config.loading import LoadedConfig
from hummingbird_agent.config.model_targets import knowledge_target
from hummingbird_agent.errors import AgentError, ConfigError
from hummingbird_agent.models import Model

log = logging.getLogger(__name__)


def workflow_guidance(loaded: LoadedConfig, workflow: str) -> str:
    """The domain guidance of a bamboo workflow (its .md body); empty when the workflow is not configured."""
    if workflow not in loaded.config.workflows:
        return ""
    path = loaded.prompt_path(workflow)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"workflow {workflow}: cannot read prompt file {path.name} ({exc.strerror})") from None


def build_navigator(loaded: LoadedConfig, model: Model, stores: Stores,
                    explorer: Explorer | None = None) -> ReasoningNavigator:
    cfg = loaded.config.bamboo
    llm = JsonLLM(ModelText(model, knowledge_target(loaded.config).name))
    salt = (loaded.secret(cfg.pseudonym_salt_env) or "").encode()
    deps = StrategyDeps(llm, salt, panda=build_panda_support(loaded))
    extractor = KnowledgeGraphExtractor(default_registry().create(cfg.extraction_strategy, deps))
    if explorer is None:
        explorer = build_explorer(loaded, llm, stores, DIAGNOSE_WORKFLOW, extractor.strategy.task_summary,
                                  strategy_clients(extractor.strategy))
    return ReasoningNavigator(extractor, llm, stores, explorer, cfg.exploratory_threshold,
                              workflow_guidance(loaded, DIAGNOSE_WORKFLOW), cfg.share_groups)


def build_investigation(loaded: LoadedConfig, model: Model, stores: Stores, workflow: str) -> InvestigationKit:
    """The parts of `investigate` over `workflow`'s data sources (none when it is not configured), the
    knowledge tools and the MCP servers; whatever `bamboo.explore` says (a human asked for it). No I/O."""
    cfg = loaded.config.bamboo
    llm = JsonLLM(ModelText(model, knowledge_target(loaded.config).name))
    tool_vectors = build_vector_store(loaded, stores.embedder.dimensions, TOOLS_COLLECTION_SUFFIX)
    explorer = ConfiguredEnricher(loaded, llm, stores, tool_vectors, workflow, lambda i: dict(i.task_data))
    return InvestigationKit(llm, explorer, stores, workflow_guidance(loaded, workflow),
                            cfg.investigate_auto_run_read_only, cfg.investigate_require_other_approver)


def read_incident(path: str) -> IncidentInput:
    """INCIDENT.json: one object with the fields of a `populate` line; ConfigError (one line) otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return parse_incident(json.dumps(json.loads(text)))
    except (ValueError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


async def analyze_incident(navigator: ReasoningNavigator, stores: Stores, incident: IncidentInput) -> AnalysisResult:
    """Open the stores, diagnose, close them."""
    await stores.graph.open()
    try:
        await stores.vectors.open()
        try:
            return await navigator.analyze(incident)
        finally:
            await stores.vectors.aclose()
    finally:
        await stores.graph.aclose()


def print_result(result: AnalysisResult, as_json: bool) -> None:
    print(json.dumps(result.to_json(), indent=2) if as_json else result.render(), file=sys.stdout)


def report_error(exc: AgentError) -> int:
    print(f"error: bamboo analyze: {exc}", file=sys.stderr)
    return 2
