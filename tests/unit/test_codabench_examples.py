"""The Codabench-style examples score exactly as Codabench's worker would score them.

Every expected value is worked out here from the example's own files (the answers, the submitted labels,
the submitted model run on the inputs), never by BenchGen: a leaderboard column holds what the scoring
program wrote (a boolean as 1 or 0), keys that are no column are not on the leaderboard, a phase of
several tasks ranks by each column's sum over its tasks, and a computed column pools the values of the
columns it names.
"""

from __future__ import annotations

import base64
import json
import os
import zipfile
from pathlib import Path

import pytest

from cli.main import main
from tests.example_files import submitted_model, words

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="/app folders and programs side by side need the local runner as root"
)


def _accuracy(truth: list[str], guess: list[str]) -> float:
    return sum(t == g for t, g in zip(truth, guess, strict=True)) / len(truth)


def _score(bundle: Path, submission: Path, out: Path, *options: str) -> dict[str, object]:
    code = main(
        ["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out), *options]
    )
    run: dict[str, object] = json.loads((out / "run.json").read_text())
    assert (code, run["status"]) == (0, "Completed"), run.get("failure_reason")
    return run


def test_the_multitask_example_ranks_by_the_sum_over_its_tasks(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-multitask"
    books = _accuracy(
        words(example / "bundle/reference_books/books.solution"),
        words(example / "submission/books.predict"),
    )
    films = _accuracy(
        words(example / "bundle/reference_films/films.solution"),
        words(example / "submission/films.predict"),
    )

    run = _score(example / "bundle", example / "submission", tmp_path / "run")
    final = _score(example / "bundle", example / "submission", tmp_path / "final", "--phase", "Final")

    # Development runs both tasks: accuracy summed, the computed mean pooling both; "task: books" is text
    assert run["metrics"] == {"accuracy": books + films, "mean_accuracy": (books + films) / 2}
    assert run["breakdowns"] == {"task": {"0 Books": {"accuracy": books}, "1 Films": {"accuracy": films}}}
    # Final runs the films alone
    assert (final["phase"], final["metrics"]) == ("Final", {"accuracy": films, "mean_accuracy": films})


@needs_root
def test_the_app_example_scores_a_code_and_a_results_submission(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-app"
    truth = words(example / "bundle/reference_data/reviews.solution")
    reviews = (example / "bundle/input_data/reviews.txt").read_text(encoding="utf-8").splitlines()
    model = submitted_model(example / "submission/code/model.py")
    by_model = [model.predict(review) for review in reviews]
    submitted = words(example / "submission/results/reviews.predict")

    code_run = _score(example / "bundle", example / "submission/code", tmp_path / "code")
    results_run = _score(example / "bundle", example / "submission/results", tmp_path / "results")

    for run, guess in ((code_run, by_model), (results_run, submitted)):
        wrong = sum(t != g for t, g in zip(truth, guess, strict=True))
        # "notes" (text) and "per_label" (a mapping) are no columns: not on the leaderboard, not kept
        assert run["metrics"] == {
            "accuracy": (len(truth) - wrong) / len(truth),
            "errors": wrong,
            "perfect": 0.0,
        }
        assert run["other_metrics"] == {}
    # the example is meant to leave errors to find: the keyword model misses negations
    assert 0 < code_run["metrics"]["errors"] < len(truth)  # type: ignore[index]


@needs_root
def test_the_interactive_example_scores_the_answers_given_during_scoring(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-interactive"
    rows = [
        line.split("\t") for line in (example / "bundle/reference_data/reviews.tsv").read_text().splitlines()
    ]
    model = submitted_model(example / "submission/model.py")
    expected = _accuracy([label for _, label in rows], [model.predict(text) for text, _ in rows])

    run = _score(example / "bundle", example / "submission", tmp_path / "run")

    # the leaderboard shows the accuracy; "asked" is a number but no column, kept beside it; the protocol
    # note is text, ignored
    assert run["metrics"] == {"accuracy": expected}
    assert run["other_metrics"] == {"asked": float(len(rows))}


def _csv(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text(encoding="utf-8").splitlines() if line]


def _handshake_accuracy(example: Path) -> float:
    """The rounds the scoring program runs, played here with the submitted model: each round trains on
    the training rows outside its fold and answers every third test row."""
    train = _csv(example / "bundle/reference_data/train.csv")
    test = _csv(example / "bundle/reference_data/test.csv")
    rounds = 3
    correct = 0
    for number in range(rounds):
        training = [row for index, row in enumerate(train) if index % rounds != number]
        testing = test[number::rounds]
        model = submitted_model(example / "submission/model.py").Model()
        model.fit([[float(x), float(y)] for x, y, _ in training], [label for *_, label in training])
        guesses = model.predict([[float(x), float(y)] for x, y, _ in testing])
        correct += sum(guess == row[2] for guess, row in zip(guesses, testing, strict=True))
    return correct / len(test)


@needs_root
def test_the_handshake_example_scores_its_true_accuracy_every_time(tmp_path: Path) -> None:
    # given the programs that hand files over shared/ and each delete the other's, and the accuracy the
    # submitted model earns over the three rounds
    example = EXAMPLES / "codabench-handshake"
    expected = _handshake_accuracy(example)
    assert 0 < expected < 1  # the example leaves some points wrong

    # when it is scored ten times
    runs = [_score(example / "bundle", example / "submission", tmp_path / f"run-{n}") for n in range(10)]

    # then every run completed all three rounds with that accuracy, and no run has a warning but the image
    assert [run["metrics"] for run in runs] == [{"accuracy": expected, "rounds": 3.0}] * 10
    assert all(not any("ingestion" in warning for warning in run["warnings"]) for run in runs)  # type: ignore[attr-defined]


@needs_root
def test_the_lock_example_scores_with_its_lock_taken_in_input_res(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-lock"
    truth = [float(value) for value in words(example / "bundle/reference_data/values.solution")]
    guess = [float(value) for value in words(example / "submission/values.predict")]
    errors = [abs(t - g) for t, g in zip(truth, guess, strict=True)]

    run = _score(example / "bundle", example / "submission", tmp_path / "run")

    assert run["metrics"] == {"mae": sum(errors) / len(errors), "within_one": sum(e <= 1 for e in errors)}
    # the lock file was made in the scoring program's copy: the submitted files are as they were
    assert sorted(path.name for path in (example / "submission").iterdir()) == ["values.predict"]


def _floats(path: Path) -> list[list[float]]:
    return [[float(value) for value in row] for row in _csv(path)]


def _nearest_neighbours(train: list[list[float]], point: list[float], count: int = 3) -> int:
    """The majority label of the ``count`` training rows (features, then label) closest to ``point``."""
    distances = sorted(
        (sum((a - b) ** 2 for a, b in zip(row[:-1], point, strict=True)), int(row[-1])) for row in train
    )
    assert distances[count - 1][0] != distances[count][0]  # no tie decides which rows are the nearest
    votes = [label for _, label in distances[:count]]
    return max(set(votes), key=votes.count)


def _accuracies(truth: list[int], guess: list[int]) -> dict[str, float]:
    recalls = [
        sum(t == g == label for t, g in zip(truth, guess, strict=True)) / truth.count(label)
        for label in sorted(set(truth))
    ]
    return {
        "accuracy": sum(t == g for t, g in zip(truth, guess, strict=True)) / len(truth),
        "balanced_accuracy": sum(recalls) / len(recalls),
    }


def test_the_sklearn_example_scores_a_code_and_a_results_submission_in_both_phases(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-sklearn"
    for phase, name in (("Development", "dev"), ("Final", "final")):
        # the labels a 3-nearest-neighbours model gives, worked out here without scikit-learn
        train = _floats(example / f"bundle/input_{name}/train.csv")
        test = _floats(example / f"bundle/input_{name}/test.csv")
        truth = [int(label) for label in words(example / f"bundle/reference_{name}/{name}.solution")]
        by_model = [_nearest_neighbours(train, point) for point in test]
        submitted = [int(label) for label in words(example / f"submission/results/{name}.predict")]

        for kind, guess in (("code", by_model), ("results", submitted)):
            out = tmp_path / f"{name}-{kind}"
            run = _score(example / "bundle", example / f"submission/{kind}", out, "--phase", phase)

            expected = _accuracies(truth, guess)
            assert run["phase"] == phase
            assert run["metrics"] == pytest.approx(expected, rel=1e-12), (phase, kind)
            assert 0 < expected["accuracy"] < 1  # the example leaves errors to find


def test_the_plot_example_scores_with_pandas_and_draws_its_detailed_results(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-plot"
    truth = _csv(example / "bundle/reference_data/solution.csv")[1:]
    guessed = dict(_csv(example / "submission/predictions.csv")[1:])
    right = {row_id: guessed.get(row_id) == label for row_id, _, label in truth}
    categories = sorted({category for _, category, _ in truth})
    by_category = {
        category: sum(right[row_id] for row_id, kind, _ in truth if kind == category)
        / sum(kind == category for _, kind, _ in truth)
        for category in categories
    }

    run = _score(example / "bundle", example / "submission", tmp_path / "run")

    assert run["metrics"] == pytest.approx(
        {"accuracy": sum(right.values()) / len(right), "worst_category": min(by_category.values())},
        rel=1e-12,
    )
    # the detailed results page is the program's, with the chart matplotlib drew in it as a PNG
    page = (tmp_path / "run" / "detailed_results.html").read_text(encoding="utf-8")
    encoded = page.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(encoded).startswith(b"\x89PNG\r\n\x1a\n")
    for category, value in by_category.items():
        assert f"<td>{category}</td><td>{value:.3f}</td>" in page


def _zipped_words(path: Path, member: str) -> list[str]:
    with zipfile.ZipFile(path) as archive:
        return archive.read(member).decode("utf-8").split()


def _prime(number: int) -> bool:
    return number > 1 and not any(number % divisor == 0 for divisor in range(2, number))


@pytest.mark.parametrize(("phase", "data"), [("Development", "development"), ("Final", "final")])
def test_the_codalab_v15_example_runs_each_phase_on_its_own_data(
    tmp_path: Path, phase: str, data: str
) -> None:
    example = EXAMPLES / "codalab-v15"
    numbers = [int(n) for n in _zipped_words(example / f"bundle/input_data_{data}.zip", "numbers.txt")]
    truth = ["prime" if _prime(n) else "composite" for n in numbers]
    model = submitted_model(example / "submission/model.py")
    errors = sum(model.predict(n) != label for n, label in zip(numbers, truth, strict=True))

    run = _score(example / "bundle", example / "submission", tmp_path / "run", "--phase", phase)

    # the phase's own input and reference zips, its ingestion program running the submitted model
    assert run["phase"] == phase
    assert run["metrics"] == {"accuracy": (len(numbers) - errors) / len(numbers), "errors": errors}
    # the first column by rank, though written second, is the overall score
    assert (run["primary_metric"], run["overall_score"]) == (
        "accuracy",
        (len(numbers) - errors) / len(numbers),
    )
    # the example leaves errors to find: odd composites taken for primes
    assert errors > 0


def test_the_py37_example_scores_its_2019_scorer_as_the_image_would_and_names_what_differs(
    tmp_path: Path,
) -> None:
    example = EXAMPLES / "codabench-py37"
    # accuracy and the F1 of label 1 (f1_score's binary default), counted here from the files
    truth = [int(label) for label in words(example / "bundle/reference_data/labels.solution")]
    guess = [int(label) for label in words(example / "submission/labels.predict")]
    pairs = list(zip(truth, guess, strict=True))
    true_positive = sum(t == g == 1 for t, g in pairs)
    wrong = sum(t != g for t, g in pairs)
    expected = {
        "accuracy": round(1 - wrong / len(pairs), 6),
        "f1": round(2 * true_positive / (2 * true_positive + wrong), 6),
    }

    run = _score(example / "bundle", example / "submission", tmp_path / "run")

    # the scorer's np.float worked (its fallback writes -0.999999), and the run names what can differ
    assert run["metrics"] == pytest.approx(expected, abs=5e-7)
    assert 0 < expected["f1"] < 1
    assert run["runtime"] == "legacy (mapped from docker_image codalab/codalab-legacy:py37)"
    warnings = [str(warning) for warning in run["warnings"]]  # type: ignore[attr-defined]
    assert len(warnings) == 1
    warning = warnings[0]
    assert "numbers can differ: numpy 1.17 -> 1.23, scipy 1.3 -> 1.9, scikit-learn 0.21 -> 1.1" in warning


def test_the_gpu_example_runs_its_program_on_the_cpu_and_says_so(tmp_path: Path) -> None:
    example = EXAMPLES / "codabench-gpu"
    targets = dict(_csv(example / "bundle/reference_data/targets.csv")[1:])
    guesses = dict(_csv(example / "submission/predictions.csv")[1:])
    errors = [float(guesses[row_id]) - float(value) for row_id, value in targets.items()]
    expected = {
        "mae": sum(abs(error) for error in errors) / len(errors),
        "rmse": (sum(error**2 for error in errors) / len(errors)) ** 0.5,
    }

    run = _score(example / "bundle", example / "submission", tmp_path / "run")

    assert run["metrics"] == pytest.approx(expected, rel=1e-9)
    assert run["runtime"] == "legacy (mapped from docker_image codalab/codalab-legacy:gpu)"
    warnings = [str(warning) for warning in run["warnings"]]  # type: ignore[attr-defined]
    assert warnings[0].startswith(
        "docker_image codalab/codalab-legacy:gpu is a GPU image: its programs run on"
    )
