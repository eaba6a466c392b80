"""How long the run-step functions may run, in seconds: one place for the stack and for the command line
(``benchgen bundle check`` tells an author the limit without loading CDK)."""

from __future__ import annotations

# Lambda stops a function after 15 minutes at most; both run steps may take all of it.
INGEST_TIMEOUT_S = 900
SCORE_TIMEOUT_S = 900
# What a step does besides running the program: fetch and unpack the bundle and the submission, upload.
STEP_OVERHEAD_S = 120
# The longest `execution_time_limit` a bundle may ask for: its ingestion or scoring program must finish
# inside the step that runs it.
MAX_PROGRAM_SECONDS = min(INGEST_TIMEOUT_S, SCORE_TIMEOUT_S) - STEP_OVERHEAD_S
