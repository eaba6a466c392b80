"""The correlation id a function logs an uploaded object under: what ties the run's logs together."""

from __future__ import annotations

import pytest

from benchgen.bucket_layout import correlation_id, prediction_key, submission_key


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (submission_key("run-7", "predictions.json"), "run-7"),
        (prediction_key("run-7"), "run-7"),
        ("environments/gsm8k/v2/bundle.zip", "gsm8k/v2"),
        ("submissions/run-7/nested/predictions.json", "submissions/run-7/nested/predictions.json"),
    ],
)
def test_an_objects_correlation_id_is_the_run_or_environment_version_it_belongs_to(
    key: str, expected: str
) -> None:
    assert correlation_id(key) == expected
