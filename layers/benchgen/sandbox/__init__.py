"""Where untrusted code runs: scoring and ingestion programs, and the tests of patched code."""
