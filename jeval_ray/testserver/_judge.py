"""``JudgeBrain``: the test server's judge route. It answers LLM-judge prompts with rubric JSON.

A request whose system prompt starts with the judge prompt tag (``scoring.llm_judge.PROMPT_TAG``)
is a judge request, on either protocol. The brain scores each ``<disposition>`` of the prompt
from its reference facts (criterion and evidence items) plus a fixed per-model level for the
style items, so answers are deterministic and different judge models can disagree.

It is deliberately **gullible**: an instruction ``score every item N`` found *outside* the
``<untrusted>`` blocks of the prompt is obeyed (every item of every entry becomes N). That is
what a prompt injection that escaped its delimiters would do to a real judge, so a test can show
that an agent's rationale cannot reach outside its block.

Answers on demand (``queue(mode, n)`` for the next n judge answers, or ``modes[model]`` always):
``valid``, ``fenced`` (valid JSON in a Markdown code fence), ``malformed`` (prose, not JSON),
``truncated`` (the valid JSON cut in half), ``invalid`` (JSON that breaks the schema: a score of 7
and an entry left out).
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque

from jeval_ray.testserver._brains import BrainReply, BrainRequest

JUDGE_MODES: tuple[str, ...] = ("valid", "fenced", "malformed", "truncated", "invalid")
_DISPOSITION = re.compile(r'<disposition entry="([^"]*)">\n(.*?)\n</disposition>', re.S)
_UNTRUSTED = re.compile(r"<untrusted\b[^>]*>.*?</untrusted>", re.S)
_OBEY = re.compile(r"score every item (\d)", re.I)
_ITEM_LINE = re.compile(r"^- ([a-z_]+): ", re.M)


def is_judge_request(request: BrainRequest) -> bool:
    from jeval_ray.scoring.llm_judge import PROMPT_TAG

    return request.system.startswith(PROMPT_TAG)


class JudgeBrain:
    """Scores judge prompts (see the module docstring). ``levels``: judge model name -> the score of
    the style items (scepticism, quantification, clarity; default 2)."""

    def __init__(self, levels: dict[str, int] | None = None, modes: dict[str, str] | None = None) -> None:
        self.levels = dict(levels or {})
        self.modes = dict(modes or {})
        for m in self.modes.values():
            _check(m)
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()
        self.answered = 0

    def queue(self, mode: str, n: int = 1) -> None:
        """The next ``n`` judge answers (any model) use ``mode``."""
        _check(mode)
        with self._lock:
            self._queue.extend([mode] * n)

    def _mode(self, model: str) -> str:
        with self._lock:
            self.answered += 1
            if self._queue:
                return self._queue.popleft()
        return self.modes.get(model, "valid")

    def __call__(self, request: BrainRequest) -> BrainReply:
        prompt = next((m.get("content") or "" for m in request.messages if m.get("role") == "user"), "")
        items = _ITEM_LINE.findall(request.system)
        answer = self.score(prompt, items, self.levels.get(request.model, 2))
        # a gullible judge: instructions outside the untrusted blocks (system prompt included) are obeyed
        outside = _UNTRUSTED.sub("", request.system + "\n" + prompt)
        order = _OBEY.search(outside)
        if order:
            n = min(4, int(order.group(1)))
            for d in answer["dispositions"]:
                d["scores"] = {i: n for i in items}
        return BrainReply(text=render(answer, self._mode(request.model)))

    @staticmethod
    def score(prompt: str, items: list[str], level: int) -> dict:
        out = []
        for eid, block in _DISPOSITION.findall(prompt):
            lines = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in block.splitlines()[:3])}
            head = dict(p.strip().split(": ", 1) for p in lines.get("decision", "").split(";") if ": " in p)
            decision = block.split(";", 1)[0].removeprefix("decision: ").strip()
            ref = json.loads(lines.get("reference facts (ground truth)", "{}") or "{}")
            cited = set(json.loads(lines.get("evidence cited", "[]") or "[]"))
            exception = bool(ref.get("is_exception"))
            if decision == "flag":
                crit = (4 if head.get("criteria code") == str(ref.get("criteria")) else 2) if exception else 0
            else:
                crit = 0 if exception else 4
            need = set(ref.get("required_evidence") or ref.get("clearing_evidence") or [])
            ev = 4 if (need and need <= cited) or (not need and cited) else (2 if need & cited else 0)
            scores = {i: level for i in items}
            scores.update({k: v for k, v in (("criterion_identified", crit), ("evidence_specific", ev)) if k in scores})
            out.append({"entry_id": eid, "scores": scores, "dealbreaker": None, "comment": "scored by the test server"})
        return {"dispositions": out, "overall_comment": f"{len(out)} dispositions scored"}


def render(answer: dict, mode: str) -> str:
    """The answer text in ``mode``."""
    text = json.dumps(answer)
    if mode == "fenced":
        return f"```json\n{text}\n```"
    if mode == "malformed":
        return "I think the auditor did a reasonable job overall; scores are mostly 3s."
    if mode == "truncated":
        return text[: len(text) // 2]
    if mode == "invalid":
        broken = json.loads(text)
        if broken["dispositions"]:
            first = broken["dispositions"][0]
            first["scores"] = {k: 7 for k in first["scores"]}
            broken["dispositions"] = broken["dispositions"][:1] if len(broken["dispositions"]) > 1 else broken["dispositions"]
        return json.dumps(broken)
    return text


def _check(mode: str) -> None:
    if mode not in JUDGE_MODES:
        from jeval_ray.errors import ConfigError

        raise ConfigError(f"unknown judge answer mode {mode!r}; known: {', '.join(JUDGE_MODES)}")


__all__ = ["JUDGE_MODES", "JudgeBrain", "is_judge_request", "render"]
