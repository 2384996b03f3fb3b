"""Limits of the knowledge base (Bamboo): extraction, ranking, storage, what an incident records, exploration
and the PanDA tools (re-exported by `hummingbird_agent.budgets`)."""

from hummingbird_agent.budgets.service import EXCERPT_MAX_LINES

# --- knowledge base (Bamboo) ---------------------------------------------------------------------
# Reviewer rejections answered by a re-extraction before the best result is stored with a warning
# (seed: `--max-retries`, default 2); a run may override it.
BAMBOO_MAX_REVIEW_RETRIES = 2
# Symptoms taken from one failing job's log: the first distinct strong error signatures. More than
# a few are usually consequences of the first, and each becomes a node every diagnosis must match.
BAMBOO_MAX_SYMPTOMS_PER_LOG = 3
# Longest Symptom name (a normalised error signature), characters; longer lines are cut.
BAMBOO_SYMPTOM_MAX_CHARS = 200
# Lines of the failure excerpt (logs/ module) kept per job log for extraction; the same default
# size the CLI excerpt uses, so the model sees what a human would.
BAMBOO_LOG_EXCERPT_LINES = EXCERPT_MAX_LINES
# Characters of each source given to an LLM call: the discussion + commit messages, one log excerpt,
# and the reviewer's view of a source (it needs a glimpse, not the whole text).
BAMBOO_PROMPT_EMAIL_CHARS = 8000
BAMBOO_PROMPT_LOG_CHARS = 6000
BAMBOO_REVIEW_SOURCE_CHARS = 2000
# Learning: a model-written name made only of runs of at least this many words of our own prompts (or of
# their quoted placeholders and examples, any length) is the prompt's text, not a name from the sources, and is
# refused. Two-word runs of the prompts ("compare runs", "task summary") are ordinary names too; three-word runs
# ("one or two sentences", "read a log") are what a small model copies.
BAMBOO_PROMPT_ECHO_MIN_WORDS = 3
# A name that merely contains this many consecutive words of our prompts or of our own feedback to the model (a
# small model copied a rejection message into a Resolution name) is refused too, whatever else it holds; so is one
# containing a quoted placeholder of two or more words ("short label", "software component"). Six words of prompt
# text inside a name from the sources would be a coincidence.
BAMBOO_PROMPT_ECHO_CONTAINED_WORDS = 6
# Learning: the reviewer's `approved: true` counts only with a stated confidence (0-1) of at least this; a
# small model answers `approved: true, confidence: 0.0` (the prompt's template), which is no approval. Below
# it the answer is a rejection whose issues say why (shown to the re-extraction).
BAMBOO_REVIEW_MIN_CONFIDENCE = 0.5
# Learning: characters of an incident's narrative summary (the prompt asks for 3-6 sentences, ~150 characters
# each, error messages verbatim). A longer answer is cut after its last whole sentence within the limit (a
# runaway repeats itself; its first sentences are the narrative); with no sentence end within it, the plain
# summary of the graph is stored instead. Diagnosis shows BAMBOO_PROMPT_SUMMARY_CHARS of it.
BAMBOO_SUMMARY_MAX_CHARS = 1500
# Learning: output tokens asked of the model for that summary, so a runaway stops at the server: the
# character limit at ~4 characters a token, and as much again for a thinking model's reasoning (Gemini 2.5
# counts it against this cap). JSON answers get no per-call cap: a cut JSON object is no answer at all.
BAMBOO_SUMMARY_MAX_OUTPUT_TOKENS = 2 * BAMBOO_SUMMARY_MAX_CHARS // 4 + 256
# Texts per embedding request (Gemini batchEmbedContents accepts at most 100).
BAMBOO_EMBED_BATCH = 100
# Features (words, character trigrams) whose hash bucket the hashing embedder keeps: about 150 bytes each,
# so at most ~10 MB; a log vocabulary of a few projects fits well below it.
HASHING_EMBEDDER_CACHED_FEATURES = 65536
# Causes listed by `bamboo stats`.
BAMBOO_TOP_CAUSES = 10
# Learning: existing causes shown to the extraction to reuse by name (the closest ones, then the project's
# most frequent); a project rarely has more distinct causes in play, and each costs one prompt line.
BAMBOO_REUSE_CAUSES = 12
# Learning: cosine of two cause names' embeddings (hashing embedder) from which a newly named cause is
# merged into the stored one with the same numbers. Chosen on the development split's cause names and
# their paraphrases: from 0.8 up no two different causes merge (0.75: 2 of 15,576 pairs); 0.85 for margin.
BAMBOO_CAUSE_MERGE_MIN_SIMILARITY = 0.85
# Learning: fit score (0-1, as a diagnosis ranks) of the best stored cause for a newly named cause's incident
# from which the new name is taken for that cause (learn/fit_merge.py). Chosen on the development split (5 folds,
# 322 new names checked), as if names carried no numbers: the lowest of 0.5-0.8 at which no new name of one
# cause fits another cause best in any fold (0.68: one in each of 3 folds; 0.7, chosen on each 4 folds, for every
# fold).
BAMBOO_CAUSE_FIT_MERGE_MIN = 0.7
# Diagnosis: fit score (0-1) of the best candidate from which a learned cause is said to fit; below it the
# diagnosis says the failure is new to the knowledge base. Chosen on the development split (5 folds) where
# it separates logs whose cause was learned from those whose cause never was (89% / 21% above it, the best
# 0.62 has 86% / 12%; 0.5 before the whole-log term raised every fit, now 95% / 38%).
BAMBOO_KNOWN_MIN_FIT = 0.6
# Diagnosis (navigator): candidate causes kept after ranking, shown to the LLM and in the result.
BAMBOO_CANDIDATE_CAUSES = 10
# A cause read from the graph for a diagnosis comes with the first this many incidents of its support (its
# whole list grows with the store: a common cause of a 100k-incident store has thousands); the ranking gets,
# besides, every one of its incidents the vector searches scored (at most BAMBOO_VECTOR_QUERIES x 3 sections
# x BAMBOO_VECTOR_HITS + BAMBOO_LOG_VECTOR_HITS, looked up by incident), so its fit is as with the whole list.
BAMBOO_CAUSE_SAMPLE_INCIDENTS = 10
# Incidents a candidate cause lists (prompt, tool answer, the note's citations): the sample above, then the
# ones the searches scored, most similar first.
BAMBOO_CANDIDATE_INCIDENTS = 2 * BAMBOO_CAUSE_SAMPLE_INCIDENTS
# Texts of a new failure embedded for the similarity search (its error lines, then excerpts); each
# query searches every failure section, so this times BAMBOO_VECTOR_HITS bounds the hits read.
BAMBOO_VECTOR_QUERIES = 8
BAMBOO_VECTOR_HITS = 40
# Cosine score from which a stored text counts as similar. Seed: 0.7 with learned embeddings; the
# hashing embedder scores unrelated log lines at 0.1-0.3 and the same error in another run above 0.6.
BAMBOO_SIMILAR_MIN_SCORE = 0.6
# A failure's whole-log vector (section "Log", one per incident): the log's distinct normalised lines,
# newest first, up to this many characters (the size of one log excerpt in a prompt, so an embedding
# API's input limit holds; on the development split 6,000 ranked as well as 12,000 or 20,000), each
# line cut at BAMBOO_SYMPTOM_MAX_CHARS. Only the vector is stored, never the text.
BAMBOO_LOG_VECTOR_CHARS = 6000
# Raw characters of a job log's end kept while it streams (the runner keeps only the excerpt), for the
# whole-log vector: four times what the vector embeds, so lines that repeat (and count once) still
# leave it enough distinct ones.
BAMBOO_LOG_TAIL_CHARS = 4 * BAMBOO_LOG_VECTOR_CHARS
# Stored whole-log vectors read per diagnosis (the closest ones; the rest count as unlike it).
BAMBOO_LOG_VECTOR_HITS = 40
# Past incidents (with their summaries) handed to the diagnosis call.
BAMBOO_SIMILAR_INCIDENTS = 5
# Characters of one past incident's summary in the diagnosis prompt (seed: content[:500]).
BAMBOO_PROMPT_SUMMARY_CHARS = 500
# Service (learn / diagnose an MR's failure): failing jobs whose logs are read into one incident; the
# first few carry the failure, the rest are usually its consequences (and each log is one download).
BAMBOO_INCIDENT_MAX_JOBS = 3
# Past incidents listed in the citation footer of an analysis note (the knowledge tools return at most
# BAMBOO_SIMILAR_INCIDENTS + BAMBOO_CANDIDATE_CAUSES' incidents per call; a note cites the first ones).
BAMBOO_CITED_INCIDENTS_MAX = 10

# --- knowledge base: what an incident records, and the fix it learns from ------------------------
# Log lines searched for the runner's `Using ... executor with image X` preamble (it comes within the
# first ~20 lines; a long custom preamble still fits).
BAMBOO_LOG_HEAD_LINES = 100
# Echoed or traced commands (`$ cmd`, `+ cmd`) remembered while a log streams, the last ones win; the
# failing command is the last one before the excerpt, so only the tail matters.
BAMBOO_ECHOED_COMMANDS = 50
# Longest failing command kept (characters); it is a Task_Feature name, so long one-liners are cut.
BAMBOO_COMMAND_MAX_CHARS = 200
# Testing Farm requests linked from the failing jobs' logs kept per incident (each becomes a reference).
BAMBOO_MAX_REFERENCES = 10
# The fix (compare of the analysed and the passing commit): changed files listed, and characters of the
# diff summary kept as the Resolution's evidence and shown to the extractor. The summary sits inside the
# incident's discussion text, which BAMBOO_PROMPT_EMAIL_CHARS clips, so it stays well below that.
BAMBOO_FIX_MAX_FILES = 30
BAMBOO_FIX_SUMMARY_CHARS = 2500
# Diff lines shown per changed file in that summary (hunk headers and +/- lines only).
BAMBOO_FIX_FILE_DIFF_LINES = 12
# The project's CI config read for the failing job's definition (prefetch hint), characters: larger
# files are not parsed (a generated config of that size is rarely read by a person either), and the hint is cut to
# this many characters (a job definition is typically 0.2-1 KB).
BAMBOO_CI_CONFIG_MAX_CHARS = 512 * 1024
BAMBOO_CI_HINT_CHARS = 2000
# Files of that config read for one hint, `.gitlab-ci.yml` and the files it includes from its own repository
# (nested includes too), and their characters together: each file is one API request, and real projects split
# their CI config into a handful of files (GitLab itself allows 150 includes). Files past either bound are
# not read; the hint then comes from the files read. The total leaves room for one file of the largest size
# parsed plus its includes.
BAMBOO_CI_CONFIG_MAX_FILES = 20
BAMBOO_CI_CONFIG_TOTAL_CHARS = 2 * BAMBOO_CI_CONFIG_MAX_CHARS
# Exploration results handed to the extractor as context: at most this many, each cut to this many
# characters (they sit beside the log excerpts, BAMBOO_PROMPT_LOG_CHARS each).
BAMBOO_EXPLORATION_HINTS = 8
BAMBOO_EXPLORATION_HINT_CHARS = 1500

# --- knowledge base exploration (ContextEnricher, MCP) ---------------------------------------------
# Connecting to one external MCP server (spawn or HTTP, initialize, list_tools); a stdio server that
# needs longer is counted as failed and contributes no tools. Measured: stdio ~0.6 s, HTTP ~0.05 s.
MCP_CONNECT_TIMEOUT_S = 20.0
# One MCP tool call on an external server; a slower call is skipped like any failed call.
MCP_CALL_TIMEOUT_S = 60.0
# Wall clock of one run of generated orchestration code in the sandbox, tool calls included (the
# public implementation allows 600 s; ours runs in the automatic phases, so it must not hold a worker
# slot that long). Must stay below SANDBOX_MAX_LIFETIME_S.
EXPLORE_CODE_TIMEOUT_S = 120.0
# Tool calls one run of orchestration code may make; later calls are refused (the code sees an error).
EXPLORE_MAX_TOOL_CALLS = 30
# JSON bytes of one tool result sent back into the sandbox; larger results are cut to a preview.
EXPLORE_RESULT_MAX_BYTES = 64 * 1024
# JSON bytes of all tool results of one run; once reached, further calls are refused. With
# EXPLORE_RESULT_MAX_BYTES that is at least 8 full results.
EXPLORE_TOTAL_RESULT_MAX_BYTES = 512 * 1024
# Longest protocol line the sandbox may send (a call request or the final value); longer ends the run.
EXPLORE_MESSAGE_MAX_BYTES = 1024 * 1024
# Context window the tool block is fitted into (tokens) when bamboo.llm_context_window (LLM_CONTEXT_WINDOW) is 0
# and the model's server reports none (Ollama does). Gemini serves 1M; the explorer's prompts are kept far
# smaller because cost and tool-selection accuracy both degrade with huge catalogues.
TOOL_CONTEXT_WINDOW_TOKENS = 128_000
# Defaults of bamboo.tool_budget_margin / tool_max_full_schemas / tool_reserved_explore (seed defaults; the
# spec's environment names override them): tokens kept free for the answer and headroom when fitting the tool
# block; at most this many tools with a full JSON schema in a prompt, even when all would fit; full-schema
# slots reserved for description matches (source 2) so new tools are never crowded out by tools past
# investigations used (clamped to the full-schema cap).
TOOL_BUDGET_MARGIN = 1024
TOOL_MAX_FULL_SCHEMAS = 25
TOOL_RESERVED_EXPLORE = 5
# Ranking pool of tool retrieval when bamboo.tool_retrieval_candidate_k is 0 (seed: max(40, 3 x the cap)).
TOOL_RETRIEVAL_MIN_CANDIDATES = 40
TOOL_RETRIEVAL_CANDIDATES_PER_SCHEMA = 3
TOOL_RETRIEVAL_CANDIDATE_K = max(TOOL_RETRIEVAL_MIN_CANDIDATES, TOOL_RETRIEVAL_CANDIDATES_PER_SCHEMA
                                 * TOOL_MAX_FULL_SCHEMAS)
# Token estimate while filling the tool block, and the whole count where the provider has no count API
# (OpenAI-compatible): bytes / 4 (JSON-heavy English; the scripted model's usage estimate uses the same ratio).
TOOL_BYTES_PER_TOKEN = 4
# Provider token counts (Gemini countTokens, Anthropic count_tokens) of one orchestration prompt: only when its
# UTF-8 bytes exceed the window minus the margin (a token is at least one byte, so a smaller prompt fits
# without asking), then after each re-fit of a prompt still over; at most this many calls per prompt.
TOOL_COUNT_ROUNDS = 3
# Procedures exposed as proc__ tools (most reused first), and the longest proc__ tool name (longer
# signatures are cut and suffixed with a hash).
PROCEDURE_TOOLS_MAX = 25
PROCEDURE_TOOL_NAME_MAX_CHARS = 60

# --- investigate (human-approved interactive investigations) ------------------------------------
# Turns one investigation session may take (questions, proposals, approvals, finalize); a session past it
# must be finalized or abandoned. A long investigation is a few dozen turns; more is a runaway thread.
INVESTIGATE_MAX_TURNS = 40
# Bytes of one proposed or corrected orchestration block: a reviewer must be able to read what they approve
# (a note shows it whole; far below the note cap NOTE_MAX_CHARS).
INVESTIGATE_CODE_MAX_BYTES = 8 * 1024
# Hex digits of a proposal's id (sha256 of its turn and code), typed back in `approve <id>` / `reject <id>`:
# 16 (64 bits), so that nobody can search for other code under a shown id (a 32-bit prefix collision took seconds
# on one core); still one word to copy. The approve/reject pattern in investigate/replies.py accepts up to 64.
INVESTIGATE_PROPOSAL_ID_HEX = 16
# Tool calls one turn's code may make (EXPLORE_MAX_TOOL_CALLS is the automatic phases'); a reviewed block
# names its calls, so a small cap keeps "what ran" readable in the reply.
INVESTIGATE_MAX_TOOL_CALLS = 20
# Wall clock of one turn's code in the sandbox, tool calls included; below SANDBOX_MAX_LIFETIME_S. Longer
# than EXPLORE_CODE_TIMEOUT_S: a human asked for it and waits for the answer.
INVESTIGATE_TURN_TIMEOUT_S = 300.0
# Characters of one run's result shown in the reply and kept in the session (the rest is summarised).
INVESTIGATE_RESULT_PREVIEW_CHARS = 1500
# Earlier turns the planner sees (seed: the last 5 turns).
INVESTIGATE_HISTORY_TURNS = 5
# Weight of a (prompt -> tools) example of a run a human approved, and of the runs of a session finalised
# with a Cause (seed: re-indexed at 2.0); accumulated incidents are indexed at weight 1.0.
INVESTIGATE_APPROVED_WEIGHT = 1.5
INVESTIGATE_FINALIZED_WEIGHT = 2.0

# --- PanDA tools (panda strategy) --------------------------------------------------------------
# Retries of a 5xx answer or a read timeout of a PanDA GET (urllib3 Retry; every PanDA call is a read).
PANDA_MAX_RETRIES = 2
PANDA_RETRY_BACKOFF_S = 0.5
# Seconds per PanDA request (connect and read); a slow server fails one tool call, not the exploration
# (EXPLORE_CODE_TIMEOUT_S bounds the whole run).
PANDA_HTTP_TIMEOUT_S = 20.0
# Characters of one job log or linked log read from PanDA; payload.stdout files reach hundreds of MB, the
# tools summarise the head and tail, and a tool result is capped at EXPLORE_RESULT_MAX_BYTES anyway.
PANDA_LOG_MAX_CHARS = 2 * 1024 * 1024
# Linked log files (<a href> in errorDialog) fetched per call (seed: up to 5).
PANDA_LINKED_LOGS = 5
# Characters of one linked log kept in the tool result (5 of them stay under EXPLORE_RESULT_MAX_BYTES).
PANDA_LINKED_LOG_CHARS = 12000
# Ancestors followed by get_retry_chain at most (the argument is clamped to this), and errorDialog chars each.
PANDA_RETRY_CHAIN_MAX_DEPTH = 10
PANDA_ERROR_DIALOG_CHARS = 500
# Jobs summary: distinct top error diagnostics and failed PandaIDs listed (seed: 10 and 20).
PANDA_TOP_ERRORS = 10
PANDA_FAILED_JOB_IDS = 20
# Job descriptions asked per request (PanDA's own cap is 5500); scout/failed job details listed at most.
PANDA_JOBS_PER_REQUEST = 500
PANDA_MAX_SCOUT_JOBS = 20
# Candidate tasks scanned by find_similar_successful_tasks (its n_tasks is clamped to this) and the look-back
# windows (days) before the failed task's modificationTime, or before now without one (seed: 14 and 30).
PANDA_SIMILAR_MAX_TASKS = 200
PANDA_SIMILAR_WINDOW_DAYS = 14
PANDA_SIMILAR_FALLBACK_DAYS = 30
# Job-log summary: error lines and tail lines kept; comparison: lines past the divergence (seed: ~50, ~150).
PANDA_LOG_ERROR_LINES = 30
PANDA_LOG_TAIL_LINES = 50
PANDA_LOG_DIVERGENCE_LINES = 150
# Offline documentation/source index: files larger than this are skipped (generated or vendored data),
# source files are cut into chunks of this many lines, and a search returns at most this many hits.
PANDA_INDEX_MAX_FILE_BYTES = 2 * 1024 * 1024
PANDA_SOURCE_CHUNK_LINES = 40
PANDA_SEARCH_MAX_RESULTS = 20
# Characters of one search hit's snippet (seed: doc sections truncated to 500 chars).
PANDA_SNIPPET_CHARS = 500
# CLI help text returned by fetch_cli_options.
PANDA_CLI_HELP_CHARS = 16000
# Prefetch hints of the panda strategy: doc sections and source snippets read for the error, and the
# characters of all of them together (they sit beside BAMBOO_PROMPT_LOG_CHARS of logs in the prompt).
PANDA_HINT_DOCS = 3
PANDA_HINT_SOURCES = 2
PANDA_HINT_TOTAL_CHARS = 3000

# Incidents `bamboo populate` stores per write (one graph transaction, one embedding call, one vector
# upsert), and whose closest existing causes it reads at once before the batch. A ladybug write costs
# about 40 ms alone and 9 ms per incident in a batch of 200 on a busy 2-core host; a bigger batch also
# shows its later incidents fewer of the causes learned just before them (the name merge still sees
# them). A failed batch reports each of its incidents as failed (re-running is idempotent).
BAMBOO_POPULATE_BATCH = 50
# Incidents learned before nodes were keyed by project that opening the graph re-keys per write transaction
# (withdrawn, merged again under their project's keys): the populate batch, the same kind of write.
BAMBOO_REKEY_BATCH = BAMBOO_POPULATE_BATCH
