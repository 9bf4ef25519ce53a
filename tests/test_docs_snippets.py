"""The Python snippets of README.md and docs/*.md run as a new user would run them: each ```python block on its own, in
a scratch working directory, offline (no hub downloads, no API keys), with a timeout. The scratch folder holds a link
to the repo's `examples/`, as a clone's root does; nothing else of the repo is in reach but the installed package.

A block that cannot run standalone says why with `<!-- snippet: skip (the reason) -->` on the line before its fence;
skipped blocks are counted, each must give its reason, and they stay few. The README is also held to its shape (at most
250 lines, `gym.make` in its first 60) and every relative link in the pages must point at a file that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*snippet:\s*skip\s*\((?P<reason>[^()]*[^()\s][^()]*)\)\s*-->")
MAX_SKIPPED = 2
TIMEOUT_S = 300
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "TRACE_ENVS_PATH")


@dataclass(frozen=True)
class Snippet:
    page: str
    line: int
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        """page:line, and `:trains` for a block that trains a model (its lane is the slow one, see conftest.py)."""
        trains = "from trl" in self.code or "adapters_train" in self.code
        return f"{self.page}:{self.line}{':trains' if trains else ''}"


def _snippets(path: Path) -> list[Snippet]:
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            end = next((j for j in range(start, len(lines)) if lines[j].strip() == "```"), None)
            assert end is not None, f"{path.name}:{i + 1}: a ```python block is never closed"
            before = lines[i - 1].strip() if i > 0 else ""
            marker = SKIP.fullmatch(before)
            found.append(Snippet(path.relative_to(ROOT).as_posix(), i + 1, "\n".join(lines[start:end]) + "\n",
                                 marker.group("reason").strip() if marker else None))
            i = end
        i += 1
    return found


SNIPPETS = [s for page in PAGES for s in _snippets(page)]


def test_the_pages_hold_snippets_and_few_are_skipped():
    readme = [s for s in SNIPPETS if s.page == "README.md"]
    assert len(readme) >= 2 and all(s.skip is None for s in readme)  # the quickstarts run
    skipped = [s for s in SNIPPETS if s.skip]
    assert len(skipped) <= MAX_SKIPPED, [f"{s.id} ({s.skip})" for s in skipped]
    assert all(len(s.skip.split()) >= 2 for s in skipped)  # a reason, not a word


def test_every_snippet_marker_gives_a_reason_and_sits_on_a_python_block():
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if "snippet:" in line and line.strip().startswith("<!--"):
                assert SKIP.fullmatch(line.strip()), f"{page.name}:{i + 1}: write <!-- snippet: skip (why) -->"
                assert i + 1 < len(lines) and lines[i + 1].strip() == "```python", \
                    f"{page.name}:{i + 1}: the marker must sit on the line just before a ```python fence"


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if not s.skip], ids=lambda s: s.id)
def test_snippet_runs(snippet, tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code)
    env = {k: v for k, v in os.environ.items() if k not in SECRETS} | OFFLINE
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=TIMEOUT_S)
    assert res.returncode == 0, f"{snippet.id} failed:\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    assert any("gym.make" in line for line in lines[:60])


LINK = re.compile(r"\]\((?P<target>[^)\s#]*)(?:#(?P<anchor>[^)\s]*))?\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    heads = [line.lstrip("#").strip() for line in page.read_text().splitlines() if re.match(r"#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


def test_relative_links_point_at_files_and_headings_that_exist():
    for page in [*PAGES, ROOT / "CHANGELOG.md"]:
        for match in LINK.finditer(page.read_text()):
            target, anchor = match.group("target"), match.group("anchor")
            if "://" in target or target.startswith("mailto:"):
                continue
            path = page.parent / target if target else page
            assert path.exists(), f"{page.relative_to(ROOT)}: broken link {target}"
            if anchor and path.suffix == ".md":
                assert anchor in _anchors(path), f"{page.relative_to(ROOT)}: no heading #{anchor} in {target or page.name}"
