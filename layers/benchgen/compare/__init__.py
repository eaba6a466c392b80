"""The paired comparison of two runs on the same cases: before training and after."""
