"""``benchgen bundle check --calibrate``: the bundle's judge, reached at an OpenAI-compatible URL, asked
about the bundle's human-labelled answers, and its agreement with people printed per criterion."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from tests.judged import judged_bundle, judgment, labelled, rubric_judged_template

# The judge's scores of each labelled answer: right about correct on all but answer-4, always polite.
REPLIES = {
    "answer-1": {"correct": 1, "polite": 5},
    "answer-2": {"correct": 0, "polite": 5},
    "answer-3": {"correct": 1, "polite": 5},
    "answer-4": {"correct": 1, "polite": 5},
}
LABELS = [labelled(1, 1, 5), labelled(2, 0, 4), labelled(3, 1, 1), labelled(4, 0, 2)]


class Judge(http.server.BaseHTTPRequestHandler):
    """Chat completions answering each prompt with the scripted judgment of the answer it names."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        name = next(name for name in REPLIES if f"\n{name}\n" in prompt)
        reply = {
            "choices": [{"message": {"role": "assistant", "content": judgment(REPLIES[name])}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def judge_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def judged() -> Iterator[None]:
    with rubric_judged_template():
        yield


def test_calibrate_prints_each_criterion_s_agreement_and_says_when_it_is_poor(
    judged: None, judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a judged bundle with four labelled answers and its judge served at a URL
    bundle = judged_bundle(tmp_path / "env", LABELS)

    # When the bundle is checked with --calibrate against that judge
    code = main(["bundle", "check", str(bundle), "--calibrate", "--judge-url", judge_url])

    # Then the table gives each criterion's figures, and the judge that always says polite is called poor
    out = capsys.readouterr().out
    assert code == 0
    assert "Judge judge-model at " + judge_url + ", on 4 human-labelled answers:" in out
    # correct: judge 1,0,1,1 against people 1,0,1,0: po 0.75, pe 0.5, kappa 0.5, se sqrt(0.1875 / 1)
    # polite: judge always passes, people pass 2 of 4: po 0.5, pe 0.5, kappa 0
    assert out.splitlines()[-4:] == [
        "criterion  n  accuracy  kappa [95% CI]      unjudged",
        "correct    4       75%  0.50 [-0.35, 1.00]         0",
        "polite     4       50%  0.00 [-0.98, 0.98]         0",
        "this judge agrees poorly with people on polite (kappa 0.00)",
    ]


def test_calibrate_without_a_calibration_set_says_the_judge_is_uncalibrated(
    judged: None, judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = judged_bundle(tmp_path / "env", None)

    code = main(["bundle", "check", str(bundle), "--calibrate", "--judge-url", judge_url])

    assert code == 1
    assert "UNCALIBRATED judge: no human-labelled answers" in capsys.readouterr().err


def test_calibrate_needs_the_judge_s_url(
    judged: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = judged_bundle(tmp_path / "env", LABELS)

    code = main(["bundle", "check", str(bundle), "--calibrate"])

    assert code == 1
    assert "--calibrate: give --judge-url" in capsys.readouterr().err
