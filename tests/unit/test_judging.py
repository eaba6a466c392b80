"""The judging pass asking a judge about a shard's answers (judge_cases, with judge_one of
benchgen.judging), and what the judge's records of a run come to (summarize)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import msgspec
import pytest

from benchgen.bucket_layout import judging_key, judging_shard_key
from benchgen.cases import Case
from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.pacing import Budget, Pacer
from benchgen.inference.retry import Backoff
from benchgen.judging import (
    JUDGE_NAME,
    JudgeAttempt,
    JudgeRecord,
    JudgeSettings,
    iter_judgments,
    write_judgments,
)
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.prices import ModelPrices, TokenPrices
from benchgen.records.runs import LiveModel, RunRecord, RunStatus
from benchgen.scoring.reasoned import CUT_OFF
from benchgen.steps.judging import (
    NO_ANSWER,
    Judge,
    assemble,
    judge_cases,
    judge_of,
    judgments_key,
    summarize,
)
from benchgen.steps.score import score_run
from benchgen.vocabulary import ProviderKind
from tests.fakes import MemoryConnections, MemoryEnvironments, MemoryRuns, MemoryStarter, MemoryStore
from tests.judged import colour_judged_template
from tests.unit.run_world import PREDICTION_KEY, Run, invocation

SETTINGS = JudgeSettings(connection="judge-conn", model_id="meta.llama3-1-8b-instruct-v1:0")
QUICK = Backoff(attempts=2, base_s=0.0, cap_s=0.0, throttled_s=5.0)


class YesOrNo:
    """A judge's requests as a template that asks defines them: the answer is judged YES or NO."""

    prompt_fields: tuple[str, ...] = ("question", "answer")

    def prompt(self, case: Case, answer: str, settings: JudgeSettings, problem: str | None = None) -> str:
        again = f" Your last answer could not be read: {problem}" if problem else ""
        return f"Is {answer!r} right for {case.question!r}? Say YES or NO.{again}"

    def problem(self, case: Case, text: str) -> str | None:
        return None if text in ("YES", "NO") else "answer YES or NO alone"


class ScriptedJudge:
    """A judge model answering each call with the next of ``replies`` (an error raised instead), with
    the tokens a provider reports."""

    def __init__(self, *replies: str | ModelCallError) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> Answer:
        with self._lock:
            self.prompts.append(prompt)
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, ModelCallError):
            raise reply
        return Answer(text=reply, raw=json.dumps({"text": reply}), input_tokens=20, output_tokens=1)


def _line(case_id: str, answer: str | None = "Paris") -> dict[str, object]:
    case = Case(id=case_id, question="Capital of France?", answer="Paris")
    return {"case": msgspec.to_builtins(case), "answer": answer}


def _judged(model: ScriptedJudge, *lines: dict[str, object], pacer: Pacer | None = None) -> list[JudgeRecord]:
    return judge_cases(
        list(lines),
        kind=Case,
        asks=YesOrNo(),
        settings=SETTINGS,
        model=model,
        backoff=QUICK,
        pacer=pacer or Pacer(Budget(in_flight=1)),
        in_flight=1,
    )


def test_a_readable_judgment_is_the_case_s_record_with_its_tokens() -> None:
    # Given a judge that answers YES
    judge = ScriptedJudge("YES")
    # When it is asked about one answer
    [record] = _judged(judge, _line("c1"))
    # Then its record is that one readable answer, asked once
    assert record == JudgeRecord(
        id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=20, output_tokens=1)]
    )
    assert judge.prompts == ["Is 'Paris' right for 'Capital of France?'? Say YES or NO."]


def test_an_unreadable_judgment_is_asked_again_with_what_was_wrong() -> None:
    # Given a judge whose first answer cannot be read and whose second can
    judge = ScriptedJudge("Probably yes", "YES")
    # When it is asked about one answer
    [record] = _judged(judge, _line("c1"))
    # Then the second prompt says what was wrong, and the record's readable answer is the second
    assert judge.prompts[1].endswith("Your last answer could not be read: answer YES or NO alone")
    assert [attempt.problem for attempt in record.attempts] == ["answer YES or NO alone", None]
    assert record.read is not None and record.read.text == "YES"


def test_a_judgment_unreadable_twice_leaves_the_case_unjudged_with_the_judge_s_text() -> None:
    # Given a judge that never answers in the form asked
    judge = ScriptedJudge("Maybe")
    # When it is asked about one answer
    [record] = _judged(judge, _line("c1"))
    # Then it was asked twice, no answer is read, and its raw texts are kept, with no call error
    assert [attempt.text for attempt in record.attempts] == ["Maybe", "Maybe"]
    assert record.read is None
    assert record.error is None


def test_a_judge_that_keeps_timing_out_gives_an_error_record_not_a_failed_pass() -> None:
    # Given a judge whose every call times out
    judge = ScriptedJudge(ModelCallError("the judge did not answer within 30 s", retryable=True))
    # When it is asked about two answers
    records = _judged(judge, _line("c1"), _line("c2"))
    # Then each case is recorded with why no judgment came, and nothing is read
    assert [record.id for record in records] == ["c1", "c2"]
    assert all(record.read is None and record.attempts == [] for record in records)
    assert all("did not answer within 30 s" in (record.error or "") for record in records)


def test_a_throttled_judge_slows_the_shard_and_still_judges() -> None:
    # Given a judge that refuses the first call for the rate, asking a wait of no time, then answers
    judge = ScriptedJudge(
        ModelCallError("429 Too Many Requests", retryable=True, throttled=True, retry_after=0.0), "NO"
    )
    pacer = Pacer(Budget(in_flight=1))
    # When it is asked about one answer
    [record] = _judged(judge, _line("c1"), pacer=pacer)
    # Then the shard was paused once and the case is judged
    assert pacer.throttles == 1
    assert record.read is not None and record.read.text == "NO"


def test_a_case_the_model_did_not_answer_is_not_asked_about() -> None:
    # Given a case without an answer
    judge = ScriptedJudge("YES")
    # When the shard is judged
    [record] = _judged(judge, _line("c1", answer=None))
    # Then the judge is not called and the case is unjudged, saying why
    assert judge.prompts == []
    assert record == JudgeRecord(id="c1", error=NO_ANSWER)


def test_the_judge_is_asked_about_the_answer_after_the_reasoning_not_the_reasoning() -> None:
    # Given an answer after a reasoning block that first considers a wrong one
    judge = ScriptedJudge("YES")
    # When it is judged
    [record] = _judged(judge, _line("c1", answer="<think>\nLyon? No: the capital is Paris.\n</think>\nParis"))
    # Then the judge reads the answer alone
    assert judge.prompts == ["Is '\\nParis' right for 'Capital of France?'? Say YES or NO."]
    assert record.read is not None


def test_an_answer_cut_off_inside_its_reasoning_is_not_asked_about() -> None:
    # Given a completion that opened its reasoning block and never closed it
    judge = ScriptedJudge("YES")
    # When the shard is judged
    [record] = _judged(judge, _line("c1", answer="<think>\nLyon, or maybe"))
    # Then the judge is not called: there is no answer to judge, and the record says why
    assert judge.prompts == []
    assert record == JudgeRecord(id="c1", error=CUT_OFF)


def _judge(prices: ModelPrices | None = None) -> Judge:
    model = LiveModel(
        connection_id="judge-conn",
        provider=ProviderKind("bedrock"),
        model_id="meta.llama3-1-8b-instruct-v1:0",
        prices=prices,
    )
    return Judge(template="any", settings=SETTINGS, model=model)


def test_the_judge_s_summary_counts_its_calls_tokens_and_unjudged_cases_apart() -> None:
    # Given a judged case (asked twice), an unreadable one and one with no judgment
    records = [
        JudgeRecord(
            id="c1",
            attempts=[
                JudgeAttempt(text="?", problem="say YES", input_tokens=30, output_tokens=2),
                JudgeAttempt(text="YES", input_tokens=35, output_tokens=1),
            ],
        ),
        JudgeRecord(
            id="c2",
            attempts=[JudgeAttempt(text="?", problem="say YES"), JudgeAttempt(text="?", problem="say YES")],
        ),
        JudgeRecord(id="c3", error="timed out"),
    ]
    # When they are summarized
    summary = summarize(records, _judge(), None)
    # Then the calls and tokens are the judge's, and the unjudged cases say why
    assert (summary.cases, summary.calls, summary.judged, summary.unreadable, summary.errors) == (
        3,
        4,
        1,
        1,
        1,
    )
    assert (summary.input_tokens, summary.output_tokens, summary.calls_without_tokens) == (65, 3, 2)
    assert summary.unjudged_reasons == ["c2: say YES", "c3: timed out"]
    assert summary.model_id == "meta.llama3-1-8b-instruct-v1:0"
    assert summary.connection_id == "judge-conn"


def test_the_judge_s_summary_names_the_connection_it_was_reached_through() -> None:
    # Given the owner's connection named "house judge" that the judge: section names
    bedrock = ProviderKind("bedrock")
    connection = ConnectionRecord(
        connection_id="judge-conn",
        owner="alice",
        name="house judge",
        provider=bedrock,
        region="us-east-1",
        profile=registry.provider(bedrock).capabilities,
    )
    # When the judge is found and its records summarized
    judge = judge_of("any", SETTINGS, owner="alice", connections=MemoryConnections(connection))
    summary = summarize([JudgeRecord(id="c1", error="timed out")], judge, None)
    # Then the summary names the connection as its owner knows it, beside its id
    assert (summary.connection_id, summary.connection_name) == ("judge-conn", "house judge")


def test_the_judge_s_tokens_are_priced_at_its_connection_s_prices() -> None:
    # Given a judge whose connection prices a million input tokens at 2 USD and output ones at 10 USD
    prices = ModelPrices(on_demand=TokenPrices(input_per_million=2.0, output_per_million=10.0))
    record = JudgeRecord(
        id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=500_000, output_tokens=100_000)]
    )
    # When its records are summarized
    summary = summarize([record], _judge(prices), None)
    # Then the cost is the judge's own
    assert summary.cost is not None
    assert (summary.cost.input_cost, summary.cost.output_cost, summary.cost.total) == (1.0, 1.0, 2.0)


def test_a_judge_without_prices_says_why_it_has_no_cost() -> None:
    summary = summarize([JudgeRecord(id="c1", error="timed out")], _judge(), None)
    assert summary.cost is None
    assert summary.cost_note


def test_a_judge_of_the_live_model_s_own_family_is_flagged() -> None:
    # Given a llama judge
    records = [JudgeRecord(id="c1", error="timed out")]
    # When it judged a live run of a llama model, and one of a mistral model
    same = summarize(records, _judge(), "meta.llama3-70b-instruct-v1:0")
    other = summarize(records, _judge(), "mistral.mistral-large-2402-v1:0")
    uploaded = summarize(records, _judge(), None)
    # Then only the first is flagged, and an uploaded run's is not known
    assert (same.family, same.same_family, other.same_family, uploaded.same_family) == (
        "llama",
        True,
        False,
        None,
    )


@pytest.mark.parametrize(
    ("names", "flagged"),
    [
        ((None, "Llama-3.1-8B-LoRA"), True),
        ((None, "Qwen2.5-7B-LoRA"), False),
        (("my-endpoint-3", "llama-3-support-tuned"), True),
    ],
)
def test_the_run_s_model_name_tells_the_judged_model_s_family_when_its_id_does_not(
    names: tuple[str | None, str], flagged: bool
) -> None:
    # Given a llama judge, and a run whose model only its name tells (uploaded, or a live id that does not)
    records = [JudgeRecord(id="c1", error="timed out")]
    # When the run's judgments are summed up
    summary = summarize(records, _judge(), *names)
    # Then the judge is flagged when the name is of its family, and said not to be when it is of another
    assert (summary.same_family, summary.family_note) == (flagged, None)


def test_a_family_that_cannot_be_told_is_said_to_be_unknown_not_different() -> None:
    # Given a run whose model name tells no family, and a judge whose model id tells none
    records = [JudgeRecord(id="c1", error="timed out")]
    house_judge = _judge().model_copy(
        update={"settings": JudgeSettings(connection="judge-conn", model_id="house-judge")}
    )
    # When each is summed up
    unnamed = summarize(records, _judge(), None, "my-finetune-3")
    unknown_judge = summarize(records, house_judge, None, "Llama-3.1-8B-LoRA")
    # Then neither is flagged nor cleared: the summary says which family cannot be told
    assert (unnamed.same_family, unnamed.family_note) == (
        None,
        "the judged model's family cannot be told from 'my-finetune-3': whether the judge favours its "
        "answers is not known",
    )
    assert (unknown_judge.same_family, unknown_judge.family_note) == (
        None,
        "the judge's family cannot be told from its model id 'house-judge' (give it as the judge's "
        "family): whether it favours a model of its own family is not known",
    )


def test_an_uploaded_run_of_the_judge_s_family_is_flagged_when_its_judgments_are_assembled(
    tmp_path: Path,
) -> None:
    # Given a Running uploaded run whose submission names a llama model, judged by a llama judge
    run = RunRecord(
        run_id="run-1", environment_id="tiny", environment_version="v1", model="Llama-3.1-8B-LoRA", owner="bo"
    )
    runs = MemoryRuns(run.model_copy(update={"status": RunStatus.RUNNING}))
    store = MemoryStore({judging_key("run-1", JUDGE_NAME): _judge().model_dump_json().encode()})
    part = tmp_path / "part-0.jsonl"
    write_judgments(part, [JudgeRecord(id="c1", attempts=[JudgeAttempt(text="YES")])])
    store.objects[judging_shard_key("run-1", "judgments", 0)] = part.read_bytes()
    # When its judgments are assembled
    assemble("run-1", 1, runs=runs, store=store, workdir=tmp_path / "work")
    # Then the run records its judge as of its model's own family
    judging = runs.runs["run-1"].judging
    assert judging is not None
    assert (judging.family, judging.same_family, judging.family_note) == ("llama", True, None)


def _score(world: Run, judging: MemoryStarter) -> RunRecord | None:
    return score_run(
        PREDICTION_KEY,
        store=world.store,
        runs=world.runs,
        environments=world.environments,
        starter=world.starter,
        publisher=world.published,
        workdir=world.root / "score",
        invocation=invocation(),
        judging_starter=judging,
    )


def test_a_run_whose_template_asks_a_judge_is_judged_once_before_anything_is_scored(tmp_path: Path) -> None:
    # Given an ingested run of an environment whose template asks a judge, and no judgments yet
    world = Run(tmp_path)
    world.ingest()
    (record,) = world.environments.records.values()
    world.environments = MemoryEnvironments(record.model_copy(update={"template": "throwaway"}))
    judging = MemoryStarter()
    with colour_judged_template():
        # When the prediction output's event is delivered, twice
        _score(world, judging)
        _score(world, judging)
    # Then the judging pass was started once, and the run waits for it unscored
    assert judging.started == {"judge-run-1": {"run_id": "run-1"}}
    assert world.run().status is RunStatus.RUNNING
    assert world.run().overall_score is None
    assert world.starter.started == {}
    assert judgments_key("run-1") not in world.store.objects


def test_the_shards_judgments_are_assembled_in_case_order_and_the_judge_s_summary_recorded(
    tmp_path: Path,
) -> None:
    # Given a Running run whose two shards were judged, and the judge its plan found
    run = RunRecord(run_id="run-1", environment_id="tiny", environment_version="v1", model="m", owner="alice")
    runs = MemoryRuns(run.model_copy(update={"status": RunStatus.RUNNING}))
    store = MemoryStore({judging_key("run-1", JUDGE_NAME): _judge().model_dump_json().encode()})
    shards = [
        [JudgeRecord(id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=10, output_tokens=1)])],
        [JudgeRecord(id="c2", error="timed out"), JudgeRecord(id="c3", attempts=[JudgeAttempt(text="NO")])],
    ]
    for shard, records in enumerate(shards):
        part = tmp_path / f"part-{shard}.jsonl"
        write_judgments(part, records)
        store.objects[judging_shard_key("run-1", "judgments", shard)] = part.read_bytes()

    # When they are assembled
    answer = assemble("run-1", 2, runs=runs, store=store, workdir=tmp_path / "work")

    # Then the run's judgments hold every case in order, and the run names its judge and its calls
    written = tmp_path / "judgments.jsonl"
    written.write_bytes(store.objects[judgments_key("run-1")])
    assert [record.id for record in iter_judgments(written)] == ["c1", "c2", "c3"]
    assert answer == {"run_id": "run-1", "cases": 3, "judged": 2, "unreadable": 0, "errors": 1}
    judging = runs.runs["run-1"].judging
    assert judging is not None
    assert (judging.connection_id, judging.calls, judging.input_tokens) == ("judge-conn", 2, 10)
