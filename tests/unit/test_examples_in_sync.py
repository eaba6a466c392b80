"""The committed examples/ tree is exactly what the generator writes."""

from __future__ import annotations

from pathlib import Path

from examplegen import generate_examples

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REGENERATE = "run `benchgen examples generate --out examples` and commit the result"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_committed_examples_match_the_generator(tmp_path: Path) -> None:
    # given the examples regenerated from scratch
    generate_examples(tmp_path)
    fresh = _tree(tmp_path)
    committed = _tree(EXAMPLES)

    # then the same files exist
    missing = sorted(set(fresh) - set(committed))
    extra = sorted(set(committed) - set(fresh))
    assert not missing and not extra, (
        f"examples/ is out of date (missing {missing}, extra {extra}); {REGENERATE}"
    )
    # and each holds the same bytes
    drifted = [name for name in fresh if fresh[name] != committed[name]]
    assert not drifted, f"examples/ differs from the generator in {drifted}; {REGENERATE}"
