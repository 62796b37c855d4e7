"""The speed figures the README and the documentation pages quote are the ones `make bench` last wrote
to benchmarks/RESULTS.md, rounded as the pages round them: a new benchmark run that moves a figure
fails this test until the pages say the new one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
QUOTED = " ".join(" ".join(page.read_text() for page in PAGES).split())  # line breaks do not matter


def sections() -> dict[str, str]:
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    return {part.split("\n", 1)[0].strip(): part for part in re.split(r"^## ", text, flags=re.M)[1:]}


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """The cells of each body row of the first table after a header line starting ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def number(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("x"))


def quoted(*phrases: str) -> None:
    for phrase in phrases:
        assert phrase in QUOTED, f"no page says {phrase!r} (benchmarks/RESULTS.md does). " \
                                 "Fix: update the figure in README.md or docs/"


def test_render_figures():
    render = sections()["Render"]
    rows = {r[0]: r for r in table_rows(render, "| setting |")}
    standard = rows[re.search(r"the `standard` preset: (.+)", render).group(1).strip()]
    paper = rows["paper (512 + OIDN)"]
    # "..., 1 worker(s): N" (steady state, the older benchmark) or "..., 2,000 images, 1 worker(s),
    # start-up included: N" (a whole draw)
    one_worker = r"preview preset \(64 px, 4 samples\), (?:[\d,]+ images, )?1 worker\(s\)[^:]*: ([\d.]+)"
    preview = float(re.search(one_worker, render).group(1))
    quoted(f"about {round(number(paper[1]))} s per image", f"about {number(standard[1]):.2f} s per image",
           f"{round(number(standard[2]))}x faster than `paper`", f"worst {number(standard[4]):.2f}/255",
           f"about {round(preview, -1):.0f} images per second",
           f"`standard` renders {round(number(standard[2]))}x faster than `paper`")


def test_loader_figures():
    loader = sections()["Loader"]
    small, large = loader.split("### 224 x 224 px")
    small_rows = table_rows(small, "| loader |")
    large_rows = table_rows(large, "| loader |")

    def pick(rows: list[list[str]], delivers: str, workers: str) -> list[str]:
        return next(r for r in rows if r[0] == "PairLoader, packed" and r[1] == delivers and r[2] == workers)

    fast_small, fast_large = pick(small_rows, "float32", "2"), pick(large_rows, "uint8", "2")
    quoted(f"about {round(number(fast_small[3]), -3):,.0f} pairs/s at 64 px",
           f"about {round(number(fast_large[3]), -3):,.0f} at 224 px",
           f"({round(number(fast_small[4]))} and {round(number(fast_large[4]))} times a per-item loader")
    pair_loader = [number(r[4]) for r in small_rows if r[0] == "PairLoader, packed"]
    pair_loader += [number(r[4]) for r in large_rows if r[0] == "PairLoader, packed" and r[1] == "uint8"]
    float_large = [number(r[4]) for r in large_rows if r[0] == "PairLoader, packed" and r[1] == "float32"]
    quoted(f"delivers {round(min(pair_loader))}-{round(max(pair_loader))}x the pairs",
           f"float32 batches at 224 px: {round(min(float_large))}-{round(max(float_large))}x")


def test_evaluator_and_training_figures():
    evaluator, training = sections()["Evaluator"], sections()["Training on CPU"]
    plain = next(r for r in table_rows(evaluator, "| path |") if r[0].startswith("plain loop"))
    loop = table_rows(training, "| device |")[0]
    quoted(f"the evaluator encodes about {round(number(plain[2]))} images/s at 224 px",
           f"CPU training runs about {round(number(loop[2]), -1):.0f} images/s at 64 px")


@pytest.mark.parametrize("name", ["Render", "Loader", "FAISS", "Evaluator", "Training on CPU"])
def test_every_benchmark_section_is_there(name):
    assert name in sections()
