"""The docs as a reader of the repository meets them: the data dictionary is fresh and complete, the
environment the benchmark implements is documented here, and nothing cites what the repository lacks."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT

from jeval_ray.records.datadoc import data_markdown
from jeval_ray.records.schemas import DATASETS, description


def test_every_field_of_every_schema_has_a_description():
    missing = [f"{name}.{f.name}" for name, schema in DATASETS.items() for f in schema if not description(name, f.name)]
    assert not missing, f"describe them in jeval_ray/records/schemas.py DESCRIPTIONS: {missing}"


def test_docs_data_md_is_fresh():
    assert (ROOT / "docs" / "data.md").read_text() == data_markdown(), \
        "regenerate: python -m jeval_ray.records.datadoc > docs/data.md"


def test_the_generator_is_the_one_line_command_its_docstring_gives():
    import jeval_ray.records.datadoc as mod

    assert "python -m jeval_ray.records.datadoc > docs/data.md" in mod.__doc__
    out = subprocess.run([sys.executable, "-m", "jeval_ray.records.datadoc"], capture_output=True, text=True,
                         cwd=str(ROOT), env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.returncode == 0 and out.stdout == data_markdown()


def test_the_data_dictionary_answers_the_questions_issue_18_asked():
    doc = (ROOT / "docs" / "data.md").read_text()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| [^|]+ \| \w+ \| (.*) \|$", doc, re.M)}
    assert "ground truth" in description("dispositions", "is_exception").lower()
    assert "score" in description("episodes", "rationale") and "text" in description("dispositions", "rationale")
    assert "sha256" in description("steps", "observation_hash") and "UTF-8" in description("steps", "observation_hash")
    assert "node id" in description("episodes", "worker")
    for name, field in (("episodes", "run_config"), ("episodes", "extra_metrics"), ("judgments", "item_scores")):
        assert "JSON" in description(name, field)
    assert "null" in description("steps", "latency_ms") and "null" in description("steps", "tokens_in")
    assert rows and "is_exception" in rows


#: phrases that point a reader at documents the repository does not have
OUTSIDE = re.compile(r"DESIGN\s*§|\bthe spec\b|\.\./shared|shared/spec", re.IGNORECASE)


def test_docs_and_code_cite_only_what_is_in_the_repository():
    offenders = []
    for path in [*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("cluster/*"), *ROOT.glob("jeval_ray/**/*.py"),
                 *ROOT.glob("jeval_ray/**/*.json"), *ROOT.glob("configs/*")]:
        rel = path.relative_to(ROOT).as_posix()
        if not path.is_file():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{rel}:{i}: {line.strip()[:100]}")
    assert not offenders, "\n".join(offenders)


def test_the_environment_the_benchmark_implements_is_documented_in_docs():
    doc = (ROOT / "docs" / "environment_spec.md").read_text()
    for needle in ("step_idx", "observation_hash", "reasoning_trace", "evidence_coverage", "implicit approval",
                   "Citing an unopened document", "judges_per_episode", "fewer than 5 seeds", "tools_withheld"):
        assert needle in doc, needle
    assert "docs/environment_spec.md" in (ROOT / "docs" / "scoring.md").read_text()


def test_the_readme_says_what_tasks_markdown_does():
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if "python -m jeval_ray.tasks " in ln and "--markdown" in ln)
    assert "regenerates" not in line and "> docs/tasks.md" in line
    out = subprocess.run([sys.executable, "-m", "jeval_ray.tasks", "--markdown"], capture_output=True, text=True,
                         cwd=str(ROOT), env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.stdout == (ROOT / "docs" / "tasks.md").read_text()  # it prints the document; writing it is the shell's
