"""The knowledge base's workflow names in config.yaml and its MR command word: shared by the factory, the
service wiring and the event handlers."""

ACCUMULATE_WORKFLOW = "bamboo-accumulate"
DIAGNOSE_WORKFLOW = "bamboo-diagnose"
INVESTIGATE_ENGINE = "bamboo-investigate"
LEARN_COMMAND = "learn"
