"""Limits of the service itself: agent loop, tool output, model calls, notes, excerpts, sandbox, trust
gate, GitLab, data sources and sessions (re-exported by `hummingbird_agent.budgets`)."""

# --- agent loop ---------------------------------------------------------------------------------
# Default iteration budget of a workflow run (a workflow's `max_iterations` overrides it). A typical
# analyze-failures run needs 8-15 model turns; 40 leaves room for retries without runaway cost.
DEFAULT_MAX_ITERATIONS = 40
# Share of the iteration / context budget at which the soft wrap-up warning is appended (seed §12.2).
WARNING_THRESHOLD_RATIO = 0.8
# Prompt tokens per call before FINAL_TURN is forced. Gemini 2.5 accepts 1M; we stop far earlier
# because the whole history is replayed on every call and cost grows quadratically with it.
CONTEXT_LIMIT_TOKENS = 400_000
# How many times in a row an empty model response is answered with EMPTY_RESPONSE_NUDGE before the
# run ends with what it has.
MAX_EMPTY_RESPONSE_NUDGES = 2
# An analysis workflow's model that answers before any data-source call succeeded is told once to read the
# data (NO_DATA_NUDGE); a second such answer is posted under a "no data was read" first line.
MAX_NO_DATA_NUDGES = 1

# --- tool output and auto-spill -----------------------------------------------------------------
# Tool output above this size is written to the sandbox's _out/ folder and replaced by path, size
# and a preview (seed: 4 KB). The previews below must stay well under it.
SPILL_THRESHOLD_BYTES = 4 * 1024
# Head and tail of a spilled text output shown to the model; together < SPILL_THRESHOLD_BYTES.
SPILL_PREVIEW_HEAD_BYTES = 1200
SPILL_PREVIEW_TAIL_BYTES = 1200
# Chunk size for streaming between host and sandbox (seed §11.3: 64 KB chunks, no base64).
STREAM_CHUNK_BYTES = 64 * 1024
# JSON shape preview of a spilled JSON output: nesting levels and keys per object shown. The shape is
# made shallower until it fits SPILL_PREVIEW_HEAD_BYTES + SPILL_PREVIEW_TAIL_BYTES.
SPILL_SHAPE_MAX_DEPTH = 3
SPILL_SHAPE_MAX_KEYS = 25
# Longest wall time the model may ask of one sandbox_exec (SANDBOX_EXEC_TIMEOUT_S is the default);
# must stay under SANDBOX_MAX_LIFETIME_S / DEFAULT_MAX_ITERATIONS so a full run fits a sandbox's life.
TOOL_EXEC_MAX_TIMEOUT_S = 300.0
# fetch_batch_to_sandbox: requests per call, fetched this many at a time, and the preview each item
# gets (small, so a full batch answer stays near SPILL_THRESHOLD_BYTES instead of being spilled itself).
FETCH_BATCH_MAX_REQUESTS = 50
FETCH_BATCH_CONCURRENCY = 4
FETCH_BATCH_PREVIEW_BYTES = 120
# A tool error sentence shown to the model is cut here; errors are one line, never a traceback.
TOOL_ERROR_MAX_CHARS = 500
# Long CLI batches (bamboo populate/analyze) off a terminal print one progress line at most this often,
# seconds: often enough to see a stuck run in a CI log, rare enough that 10,000 incidents stay readable.
PROGRESS_LINE_INTERVAL_S = 5.0
# transcript.md shows each tool result cut to this many characters (the full data is in the sandbox).
TRANSCRIPT_RESULT_MAX_CHARS = 2000

# --- model calls ---------------------------------------------------------------------------------
# Retries of a 429/5xx model response, with exponential backoff starting at MODEL_RETRY_BASE_S.
MODEL_MAX_RETRIES = 5
MODEL_RETRY_BASE_S = 1.0
# Model answers are streamed, and a call is cut on silence, not on its length. Until the first streamed event
# (queueing, reading the prompt, a hosted model's hidden thinking: a Gemini 2.5 Pro turn rarely thinks 2 minutes;
# llama.cpp sends nothing while it reads the prompt, ~100 tokens/s on one CPU thread) a call may wait
# MODEL_FIRST_EVENT_TIMEOUT_S; after it, MODEL_SILENCE_TIMEOUT_S between two events (a small model on a loaded
# 2-core machine writes a token every ~3 s at worst; hosted APIs send a token or a ping within seconds).
MODEL_FIRST_EVENT_TIMEOUT_S = 300.0
MODEL_SILENCE_TIMEOUT_S = 60.0
# The first-event limit of a self-hosted OpenAI-compatible server, which reads the whole prompt on CPU before it
# streams anything: the shipped analyze-failures first request is ~4,500 tokens (bench/llamacpp_run.py), read at
# 15-30 tokens/s on two shared cores (bench/llamacpp.py), 150-300 s; a longer history more. Under
# MODEL_CALL_TIMEOUT_S.
LOCAL_MODEL_FIRST_EVENT_TIMEOUT_S = 900.0
# Backstop of one whole call, streaming steadily or not: MODEL_MAX_OUTPUT_TOKENS at ~5 tokens/s is ~1,640 s.
# Far above both silence limits, so only a stream that never stops trickling reaches it.
MODEL_CALL_TIMEOUT_S = 1800.0
# A streamed answer that repeats the same block (one line up to MODEL_REPEAT_MAX_BLOCK_LINES lines, blank lines
# not counted) MODEL_REPEAT_MIN_TIMES times in a row is a small model looping: the stream is stopped there and the
# text before the repeats is kept (with one copy of the block). Memory is MIN_TIMES x MAX_BLOCK_LINES line hashes
# plus one line of at most MODEL_REPEAT_LINE_MAX_CHARS (a longer one counts as a line of its own).
MODEL_REPEAT_MIN_TIMES = 4
MODEL_REPEAT_MAX_BLOCK_LINES = 8
MODEL_REPEAT_LINE_MAX_CHARS = 2000
# Cap of one backoff delay: with MODEL_MAX_RETRIES = 5 and base 1 s the waits are 1+2+4+8+16 = 31 s,
# so a model that is still unavailable after about half a minute ends the run with a failure result.
MODEL_RETRY_MAX_DELAY_S = 30.0
# A provider's Retry-After is honoured up to this many seconds; a longer wait ends the attempts at once (the
# run ends with a failure note) instead of holding a worker slot for minutes. Above MODEL_RETRY_MAX_DELAY_S
# because a provider's own figure is better than our backoff guess.
MODEL_RETRY_AFTER_MAX_S = 60.0
# Output tokens one Claude / OpenAI-compatible call may produce (Anthropic requires the cap). A note is far
# shorter (NOTE_MAX_CHARS is a GitLab limit, not a target); 8192 fits every current Claude and GPT model.
MODEL_MAX_OUTPUT_TOKENS = 8192
# Default output cap of a self-hosted OpenAI-compatible server (llama.cpp, Ollama, vLLM), which otherwise
# generates until its context is full: ~2,000 tokens at 8-15 tokens/s on CPU is 130-250 s, streamed (only
# MODEL_SILENCE_TIMEOUT_S between tokens applies; a looping answer is stopped earlier by the MODEL_REPEAT_* check).
# A note or a tool call needs far less. Hosted Gemini and OpenAI keep their own limits (a reasoning model spends
# output tokens on thinking; a low cap would starve it).
LOCAL_MODEL_MAX_OUTPUT_TOKENS = 2048
# A tool call a model wrote as JSON text (no native call) is read only from replies up to this size and
# with at most this many calls: a larger reply is an answer that happens to quote JSON, not a call.
TEXT_TOOL_CALL_MAX_CHARS = 16_000
TEXT_TOOL_CALLS_MAX = 8
# Seconds to wait for a local OpenAI-compatible server (Ollama) to report its context window at start.
MODEL_CONTEXT_PROBE_TIMEOUT_S = 5.0

# --- notes ---------------------------------------------------------------------------------------
# GitLab rejects note bodies over 1,000,000 characters; we truncate below that with a visible marker
# so the session marker and footer always fit.
NOTE_MAX_CHARS = 999_000
# Characters kept free for what the poster appends after the run's note (reply prompt, session marker:
# under 400 together), so an audited note never reaches the cut in cap_body.
NOTE_TAIL_RESERVE_CHARS = 2000
# "What I looked at": one tool argument value is shown cut to this many characters, one gap or error
# sentence to AUDIT_TEXT_MAX_CHARS (TOOL_ERROR_MAX_CHARS is the model's view; the note needs less).
AUDIT_ARG_MAX_CHARS = 80
AUDIT_TEXT_MAX_CHARS = 200
# A workflow with `action: none` logs its result (INFO) cut to this many characters; the session keeps it whole.
LOG_RESULT_MAX_CHARS = 4000

# --- build-log excerpts ---------------------------------------------------------------------------
# Default size of an excerpt. 60 numbered lines of a typical log are ~5 KB: the spill preview shows
# an excerpt cut to SPILL_PREVIEW_HEAD_BYTES + SPILL_PREVIEW_TAIL_BYTES, the knowledge base and the
# CLI take it whole.
EXCERPT_MAX_LINES = 60
# Default size with a passing run: every new block with failure evidence is output (a long stack
# trace or a list of compiler errors is the explanation), up to this many lines.
EXCERPT_PASSING_MAX_LINES = 1000
# Default size with examples: the chunk found grows to about twice the matching example's length,
# up to this many lines (earlier chunks of a project can be long lists of failed tests).
EXCERPT_EXAMPLES_MAX_LINES = 400
# Lines an unsupervised excerpt grows to through the paragraph of its error block. LogChunks'
# labelled failure chunks have a median of 6 lines and 80 % are 21 lines or fewer.
EXCERPT_PARAGRAPH_LINES = 21
# Last lines of the log shown with the unsupervised pick when no CI runner marked the failing step (the
# pick is then a guess): the end of a failed log is where the failure usually is. 15 lines are the
# baseline bench/cidiff_eval.py compares with; with a paragraph pick they stay within EXCERPT_MAX_LINES.
EXCERPT_UNANCHORED_TAIL_LINES = 15
# Bytes read and scanned at a time. Large enough that the per-block Python work is amortised, small
# enough that a block plus its split lines stays a few MB of the < 100 MB the localiser may use.
EXCERPT_READ_BLOCK_BYTES = 1024 * 1024
# Lines kept on each side of a cue line while streaming; a selected block can only grow this far
# from its cue lines (long stack traces are covered because their frames are cue lines too).
EXCERPT_WINDOW_LINES = 40
# Lines before a cue line an excerpt adds as context (the command or test name usually sits there).
EXCERPT_CONTEXT_LINES = 2
# Last lines of the log always kept: the end of a failed log holds its exit status and summary.
EXCERPT_TAIL_LINES = 200
# Cue regions kept while streaming (the best by score plus the most recent ones); bounds memory
# when a log repeats an error pattern millions of times.
EXCERPT_MAX_REGIONS = 400
# A region longer than this is closed and a new one started, so a single region stays bounded.
EXCERPT_MAX_REGION_LINES = 2000
# Characters of one line kept for scoring and display; minified bundles have megabyte lines.
EXCERPT_MAX_LINE_CHARS = 2000
# Scores of cue lines remembered by the shape of their raw bytes (digits 2-9 read as 1), in key bytes: a build
# log repeats line shapes, so a few MB spare re-scoring nearly every cue line; bounded because keys are up to
# 4 KB (the scored prefix) and the scan's whole memory budget is < 100 MB.
EXCERPT_SCORE_MEMO_BYTES = 4 * 1024 * 1024
# Distinct line signatures of a passing log remembered for the diff (8-byte hashes, ~80 MB worst
# case in CPython sets, so this also bounds the memory of --passing).
EXCERPT_MAX_PASSING_SIGNATURES = 1_000_000
# Example records read from an examples file; the knowledge base supplies a handful per project.
EXCERPT_MAX_EXAMPLES = 50

# --- sandbox -------------------------------------------------------------------------------------
# Default per-command wall time when the caller gives none; the engine passes its own per tool call.
SANDBOX_EXEC_TIMEOUT_S = 120.0
# After a command's own `timeout -s KILL` should have fired, the host waits this long more before
# killing the exec session itself (covers a wedged exec transport).
SANDBOX_KILL_GRACE_S = 5.0
# How long a sweep (`kill -KILL -1` by the box's command server) waits for the killed processes to be reaped,
# since the pids limit counts them until then: right after a fork bomb the next command's spawn would be refused.
# Most sweeps find nothing after one look; the bound is only reached when something cannot die.
SANDBOX_SWEEP_REAP_S = 0.7
# A box idle this long after its last command is swept (one message to its command server), so leftovers never
# outlive a command by much; a command arriving sooner has the sweep done first in its own request instead.
SANDBOX_IDLE_SWEEP_S = 0.5
# A started box's command server sends its first frame within this (a Python start, ~50 ms idle); one that never
# does is an image built before the server existed. Within SANDBOX_START_TIMEOUT_S.
SANDBOX_SERVER_READY_S = 30.0
# Largest frame accepted from a box's command server: it sends at most 64 KB of output per frame and small JSON
# otherwise; anything longer is a malformed message that ends the channel.
SANDBOX_FRAME_MAX_BYTES = 1024 * 1024
# Kubernetes relays a command's stdin through the box's command server: input a command leaves unread waits there,
# and beyond this the server kills the command (its stderr says so) instead of growing to the box's memory limit.
SANDBOX_STDIN_PENDING_BYTES = 64 * 1024 * 1024
# Output still read from a command's pipes once it has exited: what it wrote before its exit (a pipe holds at most
# this much); a background process keeping the pipe open is not waited for, as podman's exec did not.
SANDBOX_DRAIN_AFTER_EXIT_BYTES = 1024 * 1024
# Bound of one streaming operation (stream_exec, read_file_iter, archive): 100 MB takes ~1 s here,
# a 1 GB archive well under a minute; the bound only catches a wedged transport.
SANDBOX_STREAM_TIMEOUT_S = 600.0
# Output kept per exec stream; the rest is drained and dropped (truncated flag set). Well above
# SPILL_THRESHOLD_BYTES so spilling sees the real size; a model wanting more redirects to a file.
SANDBOX_STDOUT_CAP_BYTES = 1024 * 1024
SANDBOX_STDERR_CAP_BYTES = 64 * 1024
# Starting a sandbox: podman run takes ~0.3 s; a K8s pod needs scheduling and an image pull.
SANDBOX_START_TIMEOUT_S = 120.0
# Removing a sandbox (podman rm -f / pod delete); close() never waits longer.
SANDBOX_CLOSE_TIMEOUT_S = 30.0
# A `podman run` whose caller was cancelled (shutdown, start timeout) may finish this long before it is killed:
# killed half-way it leaves conmon and `runc init` behind that no `podman rm` can find.
SANDBOX_CREATE_SETTLE_S = 30.0
# Backstop lifetime of one sandbox (podman --timeout, pod activeDeadlineSeconds): an orphan left by a
# crashed worker dies by itself. Must exceed the longest session (iterations x exec timeout).
SANDBOX_MAX_LIFETIME_S = 4 * 3600
# Default resource limits of one sandbox. The working-directory tmpfs is charged to the sandbox's
# memory, so SANDBOX_MEMORY_BYTES must stay well above SANDBOX_WORKDIR_BYTES.
SANDBOX_MEMORY_BYTES = 1024 * 1024 * 1024
SANDBOX_WORKDIR_BYTES = 512 * 1024 * 1024
SANDBOX_PIDS_LIMIT = 256
SANDBOX_CPUS = 1.0
# Pool backend: how long to wait for a Ready standby pod before creating one directly, and how
# often to look again meanwhile.
SANDBOX_POOL_CLAIM_WAIT_S = 10.0
SANDBOX_POOL_POLL_S = 0.5
# Podman worker: started sandboxes kept ready (each used by one run, then removed), so a run's first command
# does not wait for `podman run` (0.3 s alone, seconds when ten start together). At most the worker's
# max_concurrent_agents; small, because each is a running container (pids, memory reservations) and the
# runs of a burst beyond it start their own while the pool refills.
SANDBOX_WARM_POOL_SIZE = 4
# A ready sandbox unused this long is removed and replaced, so the one a run takes is never near its
# lifetime backstop (a pooled container's --timeout is SANDBOX_MAX_LIFETIME_S plus this) and an idle worker
# restarts its pool only every few minutes.
SANDBOX_WARM_POOL_MAX_IDLE_S = 600.0
# After a failed pool start (podman broken or the host out of resources): wait this long before trying again,
# so a broken podman is not hammered; runs meanwhile start their own sandbox and report its error.
SANDBOX_WARM_POOL_RETRY_S = 5.0

# --- trust gate ----------------------------------------------------------------------------------
# A non-member's `/hummingbird` comment or reply is refused with one note per user per MR in this
# window; later attempts are only logged (otherwise anyone who can comment could make the bot spam).
# Checked against the bot's own refusal notes on the MR, so it holds across restarts and replicas.
REFUSAL_NOTE_INTERVAL_S = 3600.0

# --- GitLab (bot token) ----------------------------------------------------------------------------
# One API request of the bot's client (connect and read). Notes and discussion pages answer in well under
# a second; the bound keeps a hung proxy from holding a worker thread (and shutdown) for long.
GITLAB_REQUEST_TIMEOUT_S = 20.0
# Tries of a read or idempotent PUT on 429/5xx/timeouts, and of a note POST (each repeat only after the
# bot's own note was looked for and not found). Backoff doubles from the base: 1 + 2 s between three
# tries, so an outage fails a handler in under a minute and it is retried by the queue instead.
GITLAB_ATTEMPTS = 3
GITLAB_RETRY_BASE_S = 1.0
GITLAB_RETRY_MAX_DELAY_S = 8.0
# A note POST that got no answer (our read timeout, a gateway's 504) may still be running in GitLab, which
# can commit it until its own request limit ends it (60 s: GITLAB_RAILS_RACK_TIMEOUT / the Puma worker
# timeout; an ended request's transaction rolls back). Before the POST is repeated, the bot's note is looked
# for until this long after the first POST was sent: GitLab's limit plus 30 s for proxy queueing, counted
# from our send (earlier than GitLab's start). Raise it (gitlab.write_settle_s) with the instance's limit.
GITLAB_WRITE_SETTLE_S = 90.0
# How often the note is looked for within that window; a note that appears is found this soon after.
GITLAB_SETTLE_POLL_S = 5.0

# --- data sources ---------------------------------------------------------------------------------
# Connect/read timeout of one data-source HTTP request (GitLab read token, Kubernetes, Kubearchive,
# Testing Farm). A read timeout applies between bytes, so long streamed pages are not cut by it.
DATA_SOURCE_HTTP_TIMEOUT_S = 30.0
# Items per Kubernetes/Kubearchive list page (`limit`). Memory is O(one item) whatever the page size
# (pages are stream-parsed); fewer, larger pages mean fewer round trips.
KUBE_LIST_PAGE_LIMIT = 500
# Pages followed per source and label selector before giving up on a continue-token loop; with
# KUBE_LIST_PAGE_LIMIT that is 500k items, far above any commit's PipelineRuns/TaskRuns.
KUBE_MAX_PAGES = 1000
# Largest single list item (one PipelineRun/TaskRun's JSON text) held while a page is scanned; etcd caps
# objects at 1.5 MiB, so only a malformed or hostile stream reaches this (it ends that source as a gap).
KUBE_MAX_ITEM_BYTES = 64 * 1024 * 1024
# Testing Farm: retries of a 429/5xx answer (urllib3 Retry) and the backoff factor between them.
TF_MAX_RETRIES = 3
TF_RETRY_BACKOFF_S = 0.5
# Testing Farm test logs: redirects followed, each re-checked against the artifacts prefix.
TF_MAX_REDIRECTS = 5
# Bytes held back at the end of a job-log chunk when it ends inside an ANSI escape sequence, so the
# sequence is stripped whole with the next chunk (escape sequences are < 20 bytes).
ANSI_CARRY_MAX_BYTES = 32
# Last bytes of a streamed job log kept on the host for its spill preview (the failure excerpt); all
# lines are counted, so excerpt line numbers are the whole log's. Failures sit near a log's end; a
# failure earlier than this window falls back to the excerpt's view of the window's own cues.
JOB_LOG_PREVIEW_WINDOW_BYTES = 8 * 1024 * 1024

# --- sessions ------------------------------------------------------------------------------------
# Part size of the multipart upload of sandbox.tar.gz to S3. S3's minimum part is 5 MiB; 8 MiB keeps
# peak memory of one save at one part (plus one STREAM_CHUNK_BYTES read) whatever the archive size.
S3_PART_BYTES = 8 * 1024 * 1024
# Default age (days since a session was last saved) after which it expires: `sessions.max_age_days`. A reply
# resumes a session, and review threads are answered within days to weeks; a month keeps those while bounding
# the store (local sweep; S3: the lifecycle rule in kubernetes/s3-sessions-lifecycle.json, same number).
SESSION_MAX_AGE_DAYS = 30
# Seconds between sweeps of expired local sessions in `serve` (one also runs at start-up). Expiry is counted in
# days, so an hour late is nothing; a sweep reads one directory entry per session.
SESSION_SWEEP_INTERVAL_S = 3600.0

# --- secrets -------------------------------------------------------------------------------------
# Shortest secret value (an env var the config or the MCP servers file names) the service starts with.
# Every secret is replaced by `[redacted]` wherever it appears in logs, notes, transcripts and saved
# sessions; a shorter value would match ordinary words, ids and hashes in that text (a 4-character value
# turns up in any long log) and is guessable anyway. Refused at start-up, never silently left unredacted.
# 8 keeps every real token form (GitLab glpat-*, model API keys, webhook secrets) and the test fakes' keys.
SECRET_MIN_CHARS = 8
