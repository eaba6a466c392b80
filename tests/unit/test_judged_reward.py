"""A template that asks a judge model is a reward from AI feedback: reward() and the standalone grader ask the
judge the same way a run does (the same prompt, once more when its answer cannot be read, the same strict
parse and score), an answer left unjudged has no reward, and the packages that can call the judge carry its
settings and calibration and nothing secret, while the provider profiles that cannot say why.

The judged template is registered here as the documented throwaway name with the contract's case type and
requests (``JudgeCase``, ``ASKS``), beside a stand-in for its run judge that reads the judging pass's
records through ``ScoringOptions.judgments`` as the contract says."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from benchgen.bundle.spec import Criterion
from benchgen.cases import Prediction
from benchgen.environment import open_environment
from benchgen.inference.model import Answer
from benchgen.inference.retry import Backoff
from benchgen.judging import JUDGE_ATTEMPTS, JudgeAttempt, JudgeRecord, JudgeSettings
from benchgen.records.judge_calibration import CalibrationStatus, CriterionAgreement, JudgeCalibration
from benchgen.scoring import ScoringOptions, build_template
from benchgen.scoring.judge import ASKS, JudgeCase, case_score, parse_judgment
from benchgen.scoring.reward import grader_source, grading_fields, reward
from benchgen.scoring.templates import Judge, TemplateDefinition, judging
from benchgen.training.package import PackageRefused, build_package
from benchgen.training.preparation import generate
from benchgen.verdicts import VerdictRecord
from benchgen.vocabulary import Method, TemplateName
from tests.judged import asking_template
from tests.throwaway import NAME
from tests.unit.preparation_inputs import make_spec, run_source
from tests.unit.preparations import info

MODEL_ID = "smollm2-135m-instruct"
CONNECTION = "conn-owner-private-7"
SECRET = "sk-never-in-a-package-1234"
RUBRIC = [
    {"id": "correct", "description": "States the right cause", "scale": [0, 4], "weight": 2.0},
    {"id": "brief", "description": "Says it in two sentences at most"},
]
QUESTION = "Why does the sky look blue?"
REFERENCE = "Air scatters short blue wavelengths of sunlight more than long red ones."
ANSWER = "Because the air scatters blue light more than red light."
# The judge's answers: read, 3 of 4 on a criterion of weight 2 and 1 of 1 on one of weight 1 = 5/6.
READABLE = json.dumps(
    {
        "criteria": [
            {"id": "correct", "score": 3, "reason": "Names scattering but not wavelength."},
            {"id": "brief", "score": 1, "reason": "One sentence."},
        ]
    }
)
UNREADABLE = "The answer is pretty good, I would give it a 3."
NO_WAIT = Backoff(attempts=1, base_s=0.0, cap_s=0.0)


def _run_judge(options: ScoringOptions) -> Judge:
    """The run's judge of the judged template as the contract has it: a case's readable judgment scored by
    case_score of parse_judgment; without one, the case is unjudged."""

    def judge(case: JudgeCase, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
        record = (options.judgments or {}).get(case.id)
        read = record.read if record is not None else None
        scores = parse_judgment(read.text, case) if read is not None else "unjudged"
        score = case_score(case, scores) if not isinstance(scores, str) else 0.0
        text = prediction.prediction_text if prediction is not None else None
        return VerdictRecord(
            case_id=case.id,
            gold=case.reference or "",
            prediction=text,
            passed=score >= 0.5,
            answered=True,
            score=score,
        )

    return judging(JudgeCase, judge)


@pytest.fixture
def judged() -> Iterator[TemplateDefinition]:
    """The judged template registered under the throwaway name, the way the registry finds a template."""
    with asking_template(
        build=_run_judge, case_fields=("rubric", "reference"), judged=(), case_type=JudgeCase, asks=ASKS
    ) as definition:
        yield definition


@dataclass
class ScriptedJudge:
    """A judge model that answers each prompt with the next of its replies, keeping the prompts."""

    replies: list[str]
    prompts: list[str] = field(default_factory=list)

    def complete(self, prompt: str) -> Answer:
        self.prompts.append(prompt)
        text = self.replies[len(self.prompts) - 1]
        return Answer(text=text, raw=text)


def _settings(**given: Any) -> JudgeSettings:
    return JudgeSettings.model_validate({"connection": CONNECTION, "model_id": MODEL_ID, **given})


def _decode_case() -> JudgeCase:
    fields = {"id": "sky-1", "question": QUESTION, "rubric": RUBRIC, "reference": REFERENCE}
    return msgspec.convert(fields, JudgeCase)


def _fields(judge: JudgeSettings | None = None) -> dict[str, Any]:
    return grading_fields(_decode_case(), TemplateName(NAME), [], judge or _settings())


# ---- reward() -----------------------------------------------------------------------------------------


def test_a_judged_answer_s_reward_is_the_score_of_the_run_s_verdict_for_the_same_judgment(
    judged: TemplateDefinition,
) -> None:
    # Given a judged case's grading fields and a judge that answers in readable form
    fields = _fields()
    model = ScriptedJudge([READABLE])
    # When the answer is rewarded
    given = reward(fields, ANSWER, model=model, backoff=NO_WAIT)
    # Then the reward is the weighted mean of the criteria's places, 5/6, as the run's verdict scores it
    case = _decode_case()
    record = JudgeRecord(id=case.id, attempts=[JudgeAttempt(text=READABLE)])
    verdict = build_template(NAME, ScoringOptions(judgments={case.id: record})).judge(
        case, Prediction(id=case.id, prediction_text=ANSWER), ()
    )
    assert given == pytest.approx(5 / 6)
    assert given == verdict.score
    # and the judge was asked once, with the answer and the rubric in its prompt
    assert len(model.prompts) == 1
    assert ANSWER in model.prompts[0] and "- correct: States the right cause" in model.prompts[0]


def test_a_judge_whose_first_answer_cannot_be_read_is_asked_once_more_and_its_second_scores(
    judged: TemplateDefinition,
) -> None:
    # Given a judge that answers in prose first and in the form asked for then
    model = ScriptedJudge([UNREADABLE, READABLE])
    # When the answer is rewarded
    given = reward(_fields(), ANSWER, model=model, backoff=NO_WAIT)
    # Then the second answer gives the reward, and the second prompt told the judge what was wrong
    assert given == pytest.approx(5 / 6)
    assert "Your last reply could not be read: the reply is not one JSON object." in model.prompts[1]


def test_an_answer_the_judge_cannot_judge_readably_twice_has_no_reward(judged: TemplateDefinition) -> None:
    # Given a judge that never answers in the form asked for
    model = ScriptedJudge([UNREADABLE, UNREADABLE, READABLE])
    # When the answer is rewarded
    given = reward(_fields(), ANSWER, model=model, backoff=NO_WAIT)
    # Then there is no reward (neither a pass nor a fail), after the judge was asked twice
    assert given is None
    assert len(model.prompts) == JUDGE_ATTEMPTS


def test_a_judged_reward_without_a_judge_model_says_what_to_pass(judged: TemplateDefinition) -> None:
    with pytest.raises(ValueError, match=f"pass reward\\(\\) the judge's model .*{MODEL_ID}"):
        reward(_fields(), ANSWER)


def test_a_judged_case_s_grading_fields_hold_its_rubric_and_the_judge_s_settings_but_no_connection(
    judged: TemplateDefinition,
) -> None:
    # Given an environment's judge with its own prompt and sampling
    prompt = "Grade this.\n{question}\n{answer}\n{rubric}"
    settings = _settings(prompt=prompt, sampling={"temperature": 0.0, "max_tokens": 300})
    # When a case's grading fields are made
    fields = _fields(settings)
    # Then they hold the question, rubric and reference, and the judge's model, sampling and prompt
    assert fields == {
        "template": NAME,
        "rubric": [
            {
                "id": "correct",
                "description": "States the right cause",
                "scale": [0, 4],
                "weight": 2.0,
                "pass_at": None,
            },
            {
                "id": "brief",
                "description": "Says it in two sentences at most",
                "scale": [0, 1],
                "weight": 1.0,
                "pass_at": None,
            },
        ],
        "reference": REFERENCE,
        "question": QUESTION,
        "judging": {
            "model_id": MODEL_ID,
            "sampling": {"temperature": 0.0, "max_tokens": 300},
            "prompt": prompt,
        },
        "criteria": [],
    }
    assert CONNECTION not in json.dumps(fields)


def test_a_judged_case_without_the_environment_s_judge_has_no_grading_fields(
    judged: TemplateDefinition,
) -> None:
    with pytest.raises(ValueError, match="needs its judge: section"):
        grading_fields(_decode_case(), TemplateName(NAME), [], None)


# ---- the standalone grader ----------------------------------------------------------------------------


@dataclass
class Endpoint:
    """An OpenAI-compatible chat completions endpoint in the test, answering with its replies in turn."""

    url: str
    replies: list[str]
    requests: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint(url="", replies=[])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, body, self.headers.get("Authorization")))
            text = state.replies[len(state.requests) - 1]
            answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _standalone() -> dict[str, Any]:
    """The standalone grader's globals, as a training box without BenchGen loads it."""
    namespace: dict[str, Any] = {"__name__": "grader"}
    exec(compile(grader_source(), "grader.py", "exec"), namespace)
    return namespace


def _point_at(monkeypatch: pytest.MonkeyPatch, endpoint: Endpoint) -> None:
    monkeypatch.setenv("BENCHGEN_JUDGE_URL", endpoint.url)
    monkeypatch.setenv("BENCHGEN_JUDGE_API_KEY", SECRET)
    monkeypatch.setenv("BENCHGEN_JUDGE_TIMEOUT", "10")


def test_the_standalone_grader_asks_the_endpoint_as_reward_asks_the_judge_and_gives_the_same_reward(
    judged: TemplateDefinition, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a judged case's fields as a package carries them (JSON), and the same judge answers twice over
    fields = json.loads(json.dumps(_fields(_settings(sampling={"temperature": 0.0, "max_tokens": 200}))))
    endpoint.replies = [UNREADABLE, READABLE]
    model = ScriptedJudge([UNREADABLE, READABLE])
    _point_at(monkeypatch, endpoint)
    # When BenchGen's reward and the standalone grader reward the answer
    ours = reward(fields, ANSWER, model=model, backoff=NO_WAIT)
    theirs = _standalone()["reward_func"]([[{"role": "assistant", "content": ANSWER}]], [fields])
    # Then both give 5/6, from the same prompts
    assert theirs == [ours] and ours == pytest.approx(5 / 6)
    assert [body["messages"] for _, body, _ in endpoint.requests] == [
        [{"role": "user", "content": prompt}] for prompt in model.prompts
    ]
    # and the endpoint was called on its chat completions path with the judge's model, sampling and the key
    path, body, authorization = endpoint.requests[0]
    assert path == "/v1/chat/completions"
    assert (body["model"], body["temperature"], body["max_tokens"]) == (MODEL_ID, 0.0, 200)
    assert authorization == f"Bearer {SECRET}"


def test_the_standalone_grader_gives_no_reward_when_the_judge_cannot_be_read_twice(
    judged: TemplateDefinition, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint.replies = [UNREADABLE, '```json\n{"criteria": []}\n```']
    _point_at(monkeypatch, endpoint)

    rewards = _standalone()["reward_func"]([ANSWER], [_fields()])

    assert rewards == [None]
    assert len(endpoint.requests) == JUDGE_ATTEMPTS


def test_a_reasoning_judge_s_answer_after_its_reasoning_block_gives_the_reward(
    judged: TemplateDefinition, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a judge that reasons in a <think> block before its readable answer, here and in a package
    reply = f"<think>\nScattering is named; wavelength is not.\n</think>\n{READABLE}"
    endpoint.replies = [reply]
    _point_at(monkeypatch, endpoint)
    # When the answer is rewarded by reward() and by the standalone grader
    ours = reward(_fields(), ANSWER, model=ScriptedJudge([reply]), backoff=NO_WAIT)
    theirs = _standalone()["reward_func"]([ANSWER], [_fields()])
    # Then both read the answer after the block, asking the judge once
    assert theirs == [ours] and ours == pytest.approx(5 / 6)
    assert len(endpoint.requests) == 1


def test_the_standalone_grader_without_an_endpoint_says_which_variable_to_set(
    judged: TemplateDefinition, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCHGEN_JUDGE_URL", raising=False)
    with pytest.raises(ValueError, match="set BENCHGEN_JUDGE_URL to the http\\(s\\) base URL"):
        _standalone()["score"](_fields(), ANSWER)


# ---- packages -----------------------------------------------------------------------------------------

CASES = 40


def _judged_env(root: Path) -> Any:
    bundle = root / "bundle"
    (bundle / "reference").mkdir(parents=True)
    spec = {
        "version": 2,
        "title": "Sky questions",
        "template": NAME,
        "tasks": [{"index": 0, "name": "sky", "reference_data": "reference"}],
        "leaderboards": [{"columns": [{"title": "Passed", "key": "all_words_rate"}]}],
        "criteria": [{"id": "rubric", "description": "Meets the case's rubric"}],
        "judge": {"connection": CONNECTION, "model_id": MODEL_ID},
    }
    (bundle / "competition.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    lines = [
        json.dumps(
            {"id": f"sky-{i:03d}", "question": f"{QUESTION} ({i})", "rubric": RUBRIC, "reference": REFERENCE}
        )
        for i in range(CASES)
    ]
    (bundle / "reference" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return open_environment(bundle, root / "work")


def _verdict(i: int) -> dict[str, Any]:
    return {
        "case_id": f"sky-{i:03d}",
        "question": f"{QUESTION} ({i})",
        "gold": REFERENCE,
        "prediction": "It is the ocean's reflection.",
        "raw_prediction": "It is the ocean's reflection.",
        "passed": False,
        "answered": True,
        "score": 0.2,
        "criteria": [{"id": "rubric", "passed": False}],
    }


def _package(root: Path, profile: str, calibration: JudgeCalibration | None = None) -> dict[str, bytes]:
    env = _judged_env(root)
    run = run_source(root, "run-1", [_verdict(i) for i in range(CASES)])
    report = generate(make_spec(method="reinforcement"), env, [run], root / "prep")
    built_from = info(Method.REINFORCEMENT, report.state_hash)
    cases = [(f"sky-{i:03d}", f"{QUESTION} ({i})") for i in range(CASES)]
    built = build_package(
        root / "prep", built_from, profile, root / "out", cases=cases, judge_calibration=calibration
    )
    with zipfile.ZipFile(built.path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.parametrize("profile", ["trl-grpo", "generic"])
def test_a_judged_package_carries_the_judge_s_settings_and_says_it_is_uncalibrated_with_no_secret(
    judged: TemplateDefinition, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    # Given a judged environment's reinforcement preparation, packaged where the judge's key is set
    monkeypatch.setenv("BENCHGEN_JUDGE_API_KEY", SECRET)
    # When it is packaged for a trainer that runs grader.py itself
    members = _package(tmp_path, profile)
    # Then the manifest names the judge's settings, the variables that reach it, and no calibration
    manifest = json.loads(members["manifest.json"])
    model = manifest["grading_model"]
    assert model["settings"]["model_id"] == MODEL_ID
    assert model["endpoint"]["url"] == "BENCHGEN_JUDGE_URL"
    assert model["calibration"] is None
    readme = members["README.md"].decode("utf-8")
    assert "Calibration: uncalibrated" in readme and "BENCHGEN_JUDGE_API_KEY" in readme
    # and the rows' grading fields name the judge's model; no member holds the key or the connection
    row = json.loads(members["train.jsonl"].decode("utf-8").splitlines()[0])
    assert row["grading"]["judging"]["model_id"] == MODEL_ID
    for name, data in members.items():
        assert SECRET.encode() not in data, name
        assert CONNECTION.encode() not in data, name


def test_a_judged_package_carries_the_agreement_with_people_registration_measured(
    judged: TemplateDefinition, tmp_path: Path
) -> None:
    # Given an environment version whose judge registration measured against people
    measured = JudgeCalibration(
        connection=CONNECTION,
        model_id=MODEL_ID,
        status=CalibrationStatus.MEASURED,
        answers=40,
        criteria=[
            CriterionAgreement(
                criterion="rubric", n=38, accuracy=0.7, kappa=0.3, kappa_low=0.05, kappa_high=0.55
            )
        ],
    )
    # When its reinforcement preparation is packaged for a trainer that runs grader.py
    members = _package(tmp_path, "trl-grpo", measured)
    # Then the manifest and the README carry those figures, poor agreement said as such, and no connection
    model = json.loads(members["manifest.json"])["grading_model"]
    assert model["calibration"]["criteria"][0]["kappa"] == 0.3
    assert model["calibration"]["uncalibrated"] is False
    assert "connection" not in model["calibration"]
    readme = members["README.md"].decode("utf-8")
    assert "kappa 0.30 [0.05, 0.55] on 38 answers" in readme
    assert "this judge agrees poorly with people on rubric" in readme
    assert all(CONNECTION.encode() not in data for data in members.values())


@pytest.mark.parametrize(
    ("profile", "why"),
    [
        ("openai-rft", "OpenAI runs a python grader without network access"),
        ("bedrock-rft", "its grader Lambda would have to reach the grading model's endpoint"),
    ],
)
def test_a_provider_profile_whose_grader_cannot_call_the_judge_refuses_saying_why_and_what_to_choose(
    judged: TemplateDefinition, tmp_path: Path, profile: str, why: str
) -> None:
    with pytest.raises(PackageRefused) as refused:
        _package(tmp_path, profile)

    assert why in str(refused.value)
    assert "choose trl-grpo, generic" in str(refused.value)


def test_the_generic_package_s_grader_command_rewards_through_the_endpoint_without_benchgen(
    judged: TemplateDefinition, endpoint: Endpoint, tmp_path: Path
) -> None:
    # Given a judged environment's generic package, its grader.py alone in a folder
    members = _package(tmp_path, "generic")
    box = tmp_path / "box"
    box.mkdir()
    (box / "grader.py").write_bytes(members["grader.py"])
    row = json.loads(members["train.jsonl"].decode("utf-8").splitlines()[0])
    completions = [{"grading": row["grading"], "completion": ANSWER}] * 2
    # and a judge that reads the first answer and can never be read about the second
    endpoint.replies = [READABLE, UNREADABLE, UNREADABLE]
    # When the grader command runs in a Python without BenchGen or site packages, pointed at the endpoint
    done = subprocess.run(
        [sys.executable, "-I", "-S", "grader.py"],
        cwd=box,
        input="".join(json.dumps(line) + "\n" for line in completions),
        capture_output=True,
        text=True,
        timeout=60,
        env={"BENCHGEN_JUDGE_URL": endpoint.url, "BENCHGEN_JUDGE_API_KEY": SECRET},
        check=False,
    )
    # Then the first completion's reward is 5/6 and the second has none
    assert done.returncode == 0, done.stderr
    rewards = [json.loads(line)["reward"] for line in done.stdout.splitlines()]
    assert rewards == [pytest.approx(5 / 6), None]
