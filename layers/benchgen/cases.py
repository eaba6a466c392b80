"""Benchmark cases (one line of ``cases.jsonl``) and the predictions made for them.

Each is declared once, as a plain record (a msgspec Struct) that the per-case loop carries, a million times
over, at a fraction of a pydantic model's cost. What comes in (a bundle's line, a submission's record) and
does not decode straight into a record is validated by a pydantic model made from the record's own fields
(``CaseModel``, ``PredictionModel``), which coerces as pydantic does and says what is wrong
(:func:`validate_case`, :func:`validate_prediction`). A line that decodes straight into a record is one the
model accepts with the same values.

The finetune artifact and a preparation read cases without judging them: :func:`read_cases` keeps every
object with a string id, its fields as JSON has them, and :func:`case_references` their text.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Iterator
from functools import reduce
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin

import msgspec
from pydantic import AfterValidator, BaseModel, Field, create_model

from benchgen.errors import BundleError
from benchgen.lazy_model import LazyModel


class Case(msgspec.Struct, kw_only=True):
    """One reference case, as the templates read it. Template-specific fields are optional here and checked
    by the template; ``criteria`` is the case's own list of criterion ids. A template whose cases have
    fields of their own declares them in a subclass, in its module (its ``case_type``), which its cases
    decode into and are validated as."""

    id: str
    question: str = ""
    answer: str = ""
    solution: str | None = None
    difficulty: str | None = None
    domain: str | None = None
    # qa
    context: str | None = None
    answers: list[str] | None = None
    # routing
    route: str | None = None
    costs: dict[str, float] | None = None
    # code
    files: dict[str, str] | None = None
    test_command: str | None = None
    criteria: Any = None


class Prediction(msgspec.Struct, kw_only=True):
    """One record of ``predictions.json`` / ``predictions.jsonl``."""

    id: str
    prediction_text: str = ""
    no_answer_probability: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    route: str | None = None
    cost_usd: Annotated[float, msgspec.Meta(ge=0.0)] | None = None
    # A reasoning model's reasoning, when its provider gave it apart from the answer (a live run keeps it
    # here); an inline ``<think>`` block stays in ``prediction_text`` and is set apart when it is judged.
    reasoning: str | None = None


# The constraints msgspec.Meta and pydantic's Field both take, under the same names.
_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern")


def _constraints(meta: object) -> object:
    """A ``msgspec.Meta`` as pydantic's Field with the same constraints; other metadata as it is."""
    if not isinstance(meta, msgspec.Meta):
        return meta
    return Field(**{name: getattr(meta, name) for name in _CONSTRAINTS if getattr(meta, name) is not None})


def _pydantic_type(kind: Any) -> Any:
    """A field's type with its constraints (on the type itself, or on a member of its union) as pydantic's."""
    if get_origin(kind) is Annotated:
        base, *metadata = get_args(kind)
        return Annotated[base, *(_constraints(meta) for meta in metadata)]
    if get_origin(kind) in (Union, UnionType):
        return reduce(operator.or_, (_pydantic_type(member) for member in get_args(kind)))
    if get_origin(kind) is list:
        return list[_pydantic_type(get_args(kind)[0])]  # type: ignore[misc]
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        # A record of a template's own (a rubric's criterion): msgspec reads it, checks included.
        return Annotated[Any, AfterValidator(functools.partial(msgspec.convert, type=kind))]
    return kind


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.required:
        return ...
    if field.default_factory is not msgspec.NODEFAULT:
        return Field(default_factory=field.default_factory)
    return field.default


@functools.cache
def _model_of(record: type[msgspec.Struct], name: str) -> type[BaseModel]:
    """The pydantic model of a record: its fields' names, types, constraints and defaults, in their order;
    keys it does not know are ignored. It is named ``name``, as pydantic says of a value that is not an
    object at all."""
    fields: dict[str, Any] = {
        field.name: (_pydantic_type(field.type), _default(field)) for field in msgspec.structs.fields(record)
    }
    return create_model(name, __base__=LazyModel, **fields)


CaseModel = _model_of(Case, "CaseModel")
PredictionModel = _model_of(Prediction, "PredictionModel")

# A validated model's fields are read from its __dict__ (extra keys were ignored, so it holds just them):
# ``dict(model)`` goes through pydantic's iterator, twice the cost of the validation itself, per record.


def validate_case(record: object, kind: type[Case] = Case) -> Case:
    """The case a decoded ``cases.jsonl`` line holds, as the model of ``kind`` (the template's case record)
    reads it (a ``"0.5"`` cost is 0.5); a pydantic ValidationError names each field that is wrong."""
    return kind(**_model_of(kind, "CaseModel").model_validate(record).__dict__)


def validate_prediction(record: object) -> Prediction:
    """The prediction a decoded record holds, as the model reads it; a pydantic ValidationError names each
    field that is wrong."""
    return Prediction(**PredictionModel.model_validate(record).__dict__)


# msgspec writes floats from 1e16 up as 1e16 where pydantic writes 1e+16 (a cost can be that large).
_EXPONENT_FROM = 1e16


def prediction_json(prediction: Prediction) -> str:
    """The record as ingest writes it into the prediction output: ``PredictionModel.model_dump_json(
    exclude_none=True)``, byte for byte."""
    if prediction.cost_usd is not None and prediction.cost_usd >= _EXPONENT_FROM:
        model = PredictionModel.model_validate(msgspec.structs.asdict(prediction))
        return model.model_dump_json(exclude_none=True)
    record: dict[str, object] = {"id": prediction.id, "prediction_text": prediction.prediction_text}
    for name in ("no_answer_probability", "route", "cost_usd", "reasoning"):
        value = getattr(prediction, name)
        if value is not None:
            record[name] = value
    return msgspec.json.encode(record).decode("utf-8")


class CaseText(NamedTuple):
    """The reference text of a case, as far as it is known (a tuple: one is made per selected case)."""

    question: str
    answer: str
    solution: str | None = None


Reference = tuple[str, str, str, str | None]  # case id, question, answer, solution


class CaseRecord(msgspec.Struct):
    """The fields of a ``cases.jsonl`` object that hold its text, each of any JSON type."""

    id: Any = None
    question: Any = None
    answer: Any = None
    solution: Any = None

    def text(self) -> CaseText:
        """Its question and answer as text (absent: empty), and its worked solution when it is text."""
        solution = self.solution
        return CaseText(
            str(self.question or ""), str(self.answer or ""), solution if isinstance(solution, str) else None
        )


class CaseId(msgspec.Struct):
    """Only the id of a ``cases.jsonl`` object: the rest of the line is checked, but nothing is kept."""

    id: Any = None


_CASE_RECORD = msgspec.json.Decoder(CaseRecord)
_CASE_ID = msgspec.json.Decoder(CaseId)


def decode_case(line: bytes) -> CaseRecord | None:
    """The case of a line, or None when the line is valid JSON but not an object; a ValueError when it
    is not JSON."""
    try:
        return _CASE_RECORD.decode(line)
    except msgspec.DecodeError:
        # What json reads and msgspec does not (NaN, integers beyond 64 bits, a non-object) is read by json.
        record = json.loads(line)
        return msgspec.convert(record, CaseRecord) if isinstance(record, dict) else None


def read_case_lines(path: Path) -> Iterator[tuple[str, bytes]]:
    """Each case line of a ``cases.jsonl`` with a string id, with that id, in file order; a BundleError on
    a line that is not JSON. Lines that are not objects, or have no string id, are passed over. Only the
    id is read: ``decode_case`` reads the rest of the lines wanted."""
    with path.open("rb") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                case_id = _CASE_ID.decode(line).id
            except msgspec.DecodeError:
                try:
                    record = decode_case(line)
                except ValueError as exc:
                    raise BundleError(
                        path.name, f"line {number} is not valid JSON; write one case object a line"
                    ) from exc
                case_id = None if record is None else record.id
            if isinstance(case_id, str):
                yield case_id, line


def read_cases(path: Path) -> Iterator[tuple[str, CaseRecord]]:
    """Each case of a ``cases.jsonl`` with a string id, in file order (see ``read_case_lines``)."""
    for case_id, line in read_case_lines(path):
        record = decode_case(line)
        assert record is not None  # the line was read as an object with this id
        yield case_id, record


def case_references(path: Path) -> Iterator[Reference]:
    """Id, question, answer and solution of every case of a ``cases.jsonl`` (see ``read_cases``)."""
    for case_id, record in read_cases(path):
        yield (case_id, *record.text())
