"""Limits of the failure triage that runs before the model (re-exported by `hummingbird_agent.budgets`).

The triage reads GitLab with the workflow's read token; these bound what one MR may cost, whatever its
pipeline looks like (an MR with 200 failed jobs stays within them and says what it left out).
"""

# --- GitLab reads -------------------------------------------------------------------------------------
# API calls of one triage (MR, pipeline lists, job lists, logs). A typical MR needs 1 + 2 + (pipelines) +
# 1-3 per failed job; 120 covers ~35 failed jobs with their base and passing logs, then the rest is
# classified from the job lists alone (which cost nothing more) and the gap is stated.
TRIAGE_MAX_CALLS = 120
# Bytes of job logs one triage reads in total, and of one log. Reading stops at the cap (the excerpt then
# rests on what was read, and the note says so); 64 MiB is ~30 s of GitLab bandwidth at worst.
TRIAGE_MAX_LOG_BYTES = 64 * 1024 * 1024
TRIAGE_MAX_ONE_LOG_BYTES = 16 * 1024 * 1024
# Bytes of a commit's statuses (JSONL, ~400 bytes each) read: thousands of statuses, more than any pipeline has.
TRIAGE_MAX_STATUS_BYTES = 4 * 1024 * 1024
# Failed checks one triage lists and classifies; beyond it the note says how many were left out.
TRIAGE_MAX_CHECKS = 60
# Pipelines of one SHA (the analysed one, or the merge base) looked at: retries of a whole pipeline, branch and MR
# pipelines, child pipelines. More on the analysed commit is a gap: its ledger is not whole.
TRIAGE_SHA_PIPELINES = 20
# Versions of an MR read to find the merge base of an older head (one per push, newest first: two pages of 100). A
# head pushed before them has no base the triage can prove; its failures are then never called pre-existing.
TRIAGE_MR_VERSIONS = 200
# Earlier failed attempts of a job examined when its last failure is someone else's (each costs a log read, the base's
# logs are cached): GitLab retries a job at most twice on its own (`retry: 2`). A job failed more often than that
# has its older failures unexamined, and is not proven.
TRIAGE_EARLIER_ATTEMPTS = 3
# Job attempts read per pipeline (one page of 100 is one call of the call budget's): 500 jobs retried once. GitLab
# lists newest first, so a longer list loses its oldest attempts; that list is a gap: its failures beyond the cut
# are listed apart (`scope=failed`) and unclassified, and the commit status cannot pass.
TRIAGE_MAX_JOBS_PER_PIPELINE = 1000
# Trigger jobs (bridges) read per pipeline, each with the child or downstream pipeline it started (two pages of 100):
# far more than a pipeline fans out to. A longer list loses its oldest bridges and says so with the total, like the
# job list above, so a pipeline it leaves out is never taken for absent.
TRIAGE_MAX_BRIDGES_PER_PIPELINE = 200
# Jobs of the project's newest read in one call (GitLab's page limit) before any pipeline's list: the job lists of
# every pipeline the page shows whole (the analysed one, the merge base's, recent target-branch ones) come from it,
# the others are read one call each. GitLab creates a pipeline's jobs with the pipeline (a retry later, so newer), so
# the page, newest first, shows a pipeline whole once it reaches a job created TRIAGE_RECENT_JOBS_MARGIN_S before the
# pipeline was: the margin covers a long pipeline creation and job ids handed out out of creation order when
# pipelines are created at once.
TRIAGE_RECENT_JOBS = 100
TRIAGE_RECENT_JOBS_MARGIN_S = 10 * 60
# Finished pipelines whose job lists are kept between triages (their jobs no longer change; a retry adds
# a job, which is why the analysed pipeline itself is always read afresh).
TRIAGE_CACHE_PIPELINES = 256
# Fingerprints of finished job logs kept between triages (a finished log never changes).
TRIAGE_CACHE_LOGS = 1024

# --- unit test reports (GitLab's pipeline `test_report`) ---------------------------------------------------
# Bytes of one pipeline's test report read (the JSON streams; a report of 100k cases with stack traces is tens of
# MiB). Reading stops at the cap: a case not found in a cut report is unread, never taken as passing or absent.
TRIAGE_REPORT_MAX_BYTES = 8 * 1024 * 1024
# Test cases kept from one report read (only the suites of the failed jobs are kept): a suite with more failed
# cases than this is a broken build, not one MR's few regressions; the rest are a gap on the row.
TRIAGE_REPORT_MAX_CASES = 5000
# Characters of a case's stack trace or output kept: its first line is what the note shows, its lines are what of
# the job's log the case accounts for (`TRIAGE_TRACE_LINES_PER_CASE` of them); 5,000 cases x 1,500 chars = 7.5 MB.
TRIAGE_REPORT_TRACE_CHARS = 1500
# Lines of a failed case's trace that the log's failure lines are matched against (pytest's failure block: the
# test's source, the assertion, the location).
TRIAGE_TRACE_LINES_PER_CASE = 30
# Reports (the failed jobs' suites of one finished pipeline) kept between triages: ~150 bytes a case, so at
# most ~50 MB when every one is at TRIAGE_REPORT_MAX_CASES.
TRIAGE_CACHE_REPORTS = 64
# Failed test cases listed under their job in the note (the rest counted); the model's copy lists them within
# TRIAGE_PROMPT_MAX_CHARS.
TRIAGE_NOTE_CASES_PER_CHECK = 8

# --- look-back (defaults of the workflow's `triage` settings) ---------------------------------------
# Recent target-branch pipelines searched when the merge base's pipeline does not decide; the window keeps
# an old failure (since fixed) from calling today's failure pre-existing.
TRIAGE_LOOKBACK_PIPELINES = 10
TRIAGE_LOOKBACK_DAYS = 7

# --- fingerprints --------------------------------------------------------------------------------------
# Strong failure lines (normalised) a fingerprint keeps: enough to tell two failures apart, few enough that
# a long test report does not dilute a match.
TRIAGE_FINGERPRINT_LINES = 12
# Specific failure lines kept from anywhere in a log (another failure is looked for among them, not only in that
# log's excerpt, which may show a later failure); a log with more is a report of thousands of failures.
TRIAGE_LOG_SIGNATURES = 4096
# Failing tests and diagnostics counted in one log (each occurrence; a test suite's or a linter's report).
# Past it the count is incomplete and that log's failure is never called pre-existing: a failure the other run
# lacks may be among the uncounted. Same order as TRIAGE_LOG_SIGNATURES: a report longer than this is
# thousands of failures, not a job one MR inherits.
TRIAGE_LOG_FINDINGS = 4096
# Lines at a log's end whose failing tests and diagnostics name a failure whose excerpt names nothing (a linter's
# report has no error word; the excerpt shows its count). Ruff's default format takes ~12 lines per diagnostic,
# so 60 reach the last few above the count and the runner's epilogue; set-up warnings printed long before a hang
# stay out. At most TRIAGE_FINGERPRINT_LINES of them are kept, like the excerpt's. The same window is what a
# pre-existing failure must show whole on the other run (quoted source context aside): a line the MR's run ends
# with that the base's never printed is a failure the base did not have, whatever words it uses.
TRIAGE_CLOSING_LINES = 60
# Share of the MR failure's lines the other failure must also show to count as the same failure. Measured
# against the MR's lines (not the union): an MR that adds a new failure to a pre-existing one is not
# covered, so it is never told the whole failure is not its own.
TRIAGE_FINGERPRINT_MIN_COVERAGE = 0.75

# A failure too generic to name (or a hang) is pre-existing only when the other run's whole log is the same line for
# line, numbers and ids aside; a log shorter than this says too little for that (`$ ./ci.sh`, `something went
# wrong`, `exit code 1` is the same for every cause).
TRIAGE_SAME_LOG_MIN_LINES = 30

# --- what reaches the model and the note -------------------------------------------------------------
# Excerpt lines per check in the first message and in the note's table details.
TRIAGE_EXCERPT_LINES = 12
# The triage's share of the model's first message; checks beyond it are listed by name and verdict only.
TRIAGE_PROMPT_MAX_CHARS = 24_000
# Characters of one excerpt line in the note (a minified bundle line would fill the table).
TRIAGE_LINE_MAX_CHARS = 300

# --- outage guard (defaults of the workflow's `triage.outage` settings) ------------------------------
# MRs of one project failing with the same fingerprint within the window: from the min_mrs-th on, an MR
# gets a short note pointing to the first diagnosis instead of a model run.
TRIAGE_OUTAGE_MIN_MRS = 2
TRIAGE_OUTAGE_WINDOW_S = 30 * 60
# Fingerprints remembered per process for the guard (oldest dropped first).
TRIAGE_OUTAGE_MAX_ENTRIES = 2048
# Failed runs of the same job (merge base first, then the target branch, newest first) whose logs are compared
# with the MR's failure: enough to find a pre-existing failure, bounded so 200 failed jobs cost 200 x 3 reads
# at most before the call budget stops them.
TRIAGE_COMPARE_LOGS_PER_CHECK = 3

# --- the MR's status note ------------------------------------------------------------------------------
# Pipelines (one per commit, the latest) the status note shows: the newest whole, the rest collapsed. Thirty sections
# of a 60-row table (~20 KB each) stay below NOTE_MAX_CHARS; an MR pushed more often loses its oldest sections.
STATUS_NOTE_MAX_COMMITS = 30
# Rounds of one status-note update (read, then create or merge and write, then read back). Writers of one MR are
# serialised by its queue group, so a round repeats only after a create (read back for the id) or when duplicates
# left by an earlier version are merged; 4 leaves room for both.
STATUS_NOTE_WRITE_ROUNDS = 4
# Triages of one event while the commit's pipelines change under it (a job retried, a pipeline started): after the
# last, the commit status stays pending for the changes' own events to decide.
TRIAGE_STABLE_READS = 3
# Hex characters of a marker's HMAC-SHA256 (gitlab/seal.py): 128 bits, beyond guessing, short enough that a
# 10-section status note spends under 1 KB on them.
MARKER_MAC_HEX_CHARS = 32

# --- the culprit of a broken target branch (triage/culprit.py) ------------------------------------------
# Target-branch pipelines a culprit search lists (newest first, older than the failing run it starts from): one
# page of GitLab's largest (100) is two months of a branch merged into a few times a day; a break older than this
# is said as "since before" the oldest one, never guessed.
CULPRIT_MAX_PIPELINES = 100
# Pages of that list read to reach the failing run and the pipelines before it (a run on an older merge base may
# lie beyond the first page).
CULPRIT_MAX_PAGES = 3
# GitLab calls one culprit search may make: the pages, ~log2(100) = 7 probes of a job list and a log each, the
# compare of the range and one merge-request look-up per commit of it; a search that runs out says so and gives
# the range it had narrowed the break to. Counted apart from TRIAGE_MAX_CALLS: the verdicts never pay for it.
CULPRIT_MAX_CALLS = 40
# Searches per triage (one per distinct pre-existing or flaky failure, the first ones in the table): a triage of 60
# failed jobs must not bisect 60 histories.
CULPRIT_MAX_SEARCHES = 5
# Failed test cases of one pre-existing check searched on the branch's test reports (one bisection each, sharing the
# reports read): the job's break is the earliest of its cases'. Each search is ~log2(100) = 7 report reads, most of
# them shared, so three fit in CULPRIT_MAX_CALLS beside the range; a check failing more cases is one break seen from
# its first few (its verdict lists them first), and the rest would only repeat it.
CULPRIT_MAX_CASES = 3
# Commits of a range looked up for the merge request that brought each in: a range longer than this is listed
# only up to it (newest first) and said longer; it is never named as one change.
CULPRIT_MAX_RANGE_COMMITS = 20
# Merge requests read per commit (a commit is in a handful at most: its own MR, a revert, a backport).
CULPRIT_MRS_PER_COMMIT = 5
# Answers kept between triages per (project, branch, failing run, job): twenty MRs blocked by one break pay for one
# search (compare and merge-request look-ups are cached beside them; job lists and logs in the triage caches).
CULPRIT_CACHE_ENTRIES = 512
# Commits of a range shown in the note and the issue (the rest counted).
CULPRIT_SHOWN_COMMITS = 5
# Calls of CULPRIT_MAX_CALLS the bisection leaves for the range: GitLab's compare and a few merge-request look-ups
# (a merge request's own commits and its merge commit are often all there is).
CULPRIT_RANGE_CALLS = 6

# --- the issue of a broken target branch (runner/broken_issue.py, `triage.culprit_issue`) -----------------------
# Open issues of the label read per triage: one per distinct failure of the branch; a project with more open breaks
# than this has other problems, and the ones past it are not updated (never duplicated: the search by key finds them).
BROKEN_ISSUES_LISTED = 50
# Merge requests an issue lists as blocked (the newest kept, the rest counted).
BROKEN_ISSUE_MAX_BLOCKED = 100
# Writes of an issue's list of blocked MRs while another replica's write replaced it between our read and our PUT
# (each round reads back, merges and writes again; as STATUS_NOTE_WRITE_ROUNDS for the status note).
BROKEN_ISSUE_WRITE_ROUNDS = 4
# Newest target-branch pipelines read to see whether a tracked break's job passes again (the newest that ran it
# decides; its streak of passes back to the first names the fixing pipeline).
BROKEN_FIX_PIPELINES = 10
# Seconds between writing an issue's list of blocked MRs and reading it back: a replica that read the list before our
# write and writes after it lands within this, and is then merged by the next round (GitLab has no conditional PUT).
BROKEN_ISSUE_SETTLE_S = 0.5
