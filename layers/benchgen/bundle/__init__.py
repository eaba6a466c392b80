"""Environment bundles: Codabench ``competition.yaml`` v2 plus BenchGen's keys."""
