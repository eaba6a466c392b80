"""A bundle in CodaLab's ``competition.yaml`` version 1.5, as CodaLab-era competitions published them.

``codalab-v15``: prime or composite. No ``version`` key, ``phases`` keyed by number (``Development`` and
``Final``, in the yaml in reverse order), each naming zips in the bundle: the scoring program, an
ingestion program that imports the participant's ``model.py``, and the phase's input and reference data.
``leaderboard.columns`` are written in reverse rank order, one sorted ascending; no
``competition_docker_image`` (Codabench's default image). ``submission/`` is a code submission whose
model takes every odd number for a prime.
"""

from __future__ import annotations

import datetime
import random
import struct
import zlib
from pathlib import Path
from typing import Any

from benchgen.zipwrite import write_zip
from examplegen.writing import write_text, write_yaml

NUMBERS_PER_PHASE = 12
PHASE_RANGES = {"development": (4, 40), "final": (40, 120)}

INGESTION_METADATA = (
    "command: python $ingestion_program/ingestion.py $input $output $ingestion_program $submission_program\n"
)
INGESTION_PY = """\
import os
import sys

input_dir, output_dir, program_dir, submission_dir = sys.argv[1:5]
sys.path.insert(0, submission_dir)
import model

with open(os.path.join(input_dir, "numbers.txt")) as handle:
    numbers = [int(line) for line in handle if line.strip()]
with open(os.path.join(output_dir, "numbers.predict"), "w") as handle:
    for number in numbers:
        handle.write(model.predict(number) + "\\n")
"""
SCORING_METADATA = "command: python $program/score.py $input $output\n"
# Written as CodaLab-era scoring programs were: argv, the ref and res folders named once, scores.txt.
SCORE_PY = """\
import os
from sys import argv

solution_dir = os.path.join(argv[1], "ref")
prediction_dir = os.path.join(argv[1], "res")
truth = open(os.path.join(solution_dir, "numbers.solution")).read().split()
guess = open(os.path.join(prediction_dir, "numbers.predict")).read().split()
errors = len([1 for t, g in zip(truth, guess) if t != g]) + abs(len(truth) - len(guess))
output = open(os.path.join(argv[2], "scores.txt"), "w")
output.write("accuracy: %r\\n" % ((len(truth) - errors) / float(len(truth))))
output.write("errors: %d\\n" % errors)
output.close()
"""
MODEL_PY = '''"""Prime or composite: every odd number is taken for a prime (9, 15, 21 ... are not)."""


def predict(number):
    return "prime" if number == 2 or number % 2 == 1 else "composite"
'''
PAGES = {
    "overview": "<h1>Prime or composite</h1><p>Say whether each number is prime.</p>",
    "evaluation": "<p>Accuracy over the phase's numbers; errors break ties.</p>",
    "terms": "<p>Use the data for this competition only.</p>",
}


def _is_prime(number: int) -> bool:
    return number > 1 and all(number % d for d in range(2, int(number**0.5) + 1))


def _png(width: int = 1, height: int = 1) -> bytes:
    """A plain grey PNG: the logo the importer requires."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _phase(number: int, label: str, data: str, start: datetime.date, limit: int) -> dict[str, Any]:
    return {
        "phasenumber": number,
        "label": label,
        "description": f"{label}: the {data} numbers.",
        "start_date": start,
        "max_submissions": 100,
        "execution_time_limit": limit,
        "is_scoring_only": False,
        "auto_migration": False,
        "scoring_program": "scoring_program.zip",
        "ingestion_program": "ingestion_program.zip",
        "input_data": f"input_data_{data}.zip",
        "reference_data": f"reference_data_{data}.zip",
    }


# One mapping referred to from each column: written with an anchor (&id001) and aliases, as CodaLab
# bundles write `leaderboard: *RESULTS`.
RESULTS = {"label": "Results", "rank": 1}


def _column(label: str, rank: int, sort: str, numeric_format: int) -> dict[str, Any]:
    return {
        "leaderboard": RESULTS,
        "label": label,
        "rank": rank,
        "sort": sort,
        "numeric_format": numeric_format,
    }


def write_v15(out: Path, rng: random.Random) -> None:
    bundle = out / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    for data, (low, high) in PHASE_RANGES.items():
        numbers = sorted(rng.sample(range(low, high), NUMBERS_PER_PHASE))
        labels = ["prime" if _is_prime(n) else "composite" for n in numbers]
        write_zip(
            bundle / f"input_data_{data}.zip", {"numbers.txt": "".join(f"{n}\n" for n in numbers).encode()}
        )
        write_zip(
            bundle / f"reference_data_{data}.zip",
            {"numbers.solution": "".join(f"{label}\n" for label in labels).encode()},
        )
    write_zip(
        bundle / "ingestion_program.zip",
        {"metadata": INGESTION_METADATA.encode(), "ingestion.py": INGESTION_PY.encode()},
    )
    write_zip(
        bundle / "scoring_program.zip", {"metadata": SCORING_METADATA.encode(), "score.py": SCORE_PY.encode()}
    )
    for name, html in PAGES.items():
        write_text(bundle / f"{name}.html", html + "\n")
    (bundle / "logo.png").write_bytes(_png())
    competition = {
        "title": "Prime or Composite (CodaLab v1.5)",
        "description": "A CodaLab-era competition: its competition.yaml is version 1.5.",
        "image": "logo.png",
        "has_registration": False,
        "html": {name: f"{name}.html" for name in PAGES},
        "phases": {
            2: _phase(2, "Final", "final", datetime.date(2026, 3, 1), 120),
            1: _phase(1, "Development", "development", datetime.date(2026, 1, 1), 60),
        },
        "leaderboard": {
            "leaderboards": {"RESULTS": RESULTS},
            "columns": {
                "errors": _column("Errors", 2, "asc", 0),
                "accuracy": _column("Accuracy", 1, "desc", 3),
            },
        },
    }
    write_yaml(bundle / "competition.yaml", competition)
    write_text(out / "submission" / "metadata", "description: odd numbers are prime\n")
    write_text(out / "submission" / "model.py", MODEL_PY)
