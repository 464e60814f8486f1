"""``python -m jeval_ray.testserver``: run the local model server until interrupted."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from jeval_ray.errors import ConfigError
from jeval_ray.testserver._app import LOOPBACK_HOSTS, LocalModelServer
from jeval_ray.testserver._brains import Brain, ScriptedBrain, builtin_brain
from jeval_ray.testserver._faults import FAULT_KINDS, Faults
from jeval_ray.testserver._judge import JUDGE_MODES, JudgeBrain


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jeval_ray.testserver",
        description="Local OpenAI/Anthropic-compatible model server (loopback only) with fault injection.",
    )
    p.add_argument("--host", default="127.0.0.1", help="must be a loopback host (127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    p.add_argument("--brain", default="scripted", help="'scripted' or 'builtin:<agent name>'")
    p.add_argument("--faults", default="", help=f"e.g. 'rate_limit:0.1,drop*2'; kinds: {', '.join(FAULT_KINDS)}")
    p.add_argument("--fault-seed", type=int, default=0)
    p.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds sent with injected 429s")
    p.add_argument("--retry-after-ms", type=float, default=None, help="also send retry-after-ms")
    p.add_argument("--delay", type=float, default=2.0, help="seconds of a 'slow' answer")
    p.add_argument("--error-status", type=int, default=503, help="status of a 'server_error'")
    p.add_argument("--rpm-limit", type=int, default=None, help="answer 429 above this many requests per window")
    p.add_argument("--rpm-window", type=float, default=60.0, help="window of --rpm-limit, seconds")
    p.add_argument("--context-window", type=int, default=None, metavar="TOKENS",
                   help="reject a request whose prompt passes TOKENS with OpenAI's HTTP 400 context_length_exceeded")
    p.add_argument("--response-formats", default=None, help="response_format types accepted, e.g. 'text,json_object' "
                   "(llama.cpp: a json_schema gets HTTP 500 naming response_format); default: any")
    p.add_argument("--api-key-env", default=None, help="NAME of an env var holding the key clients must send")
    p.add_argument("--judge-levels", default="", help="judge route: style-item score per judge model, "
                   "e.g. 'judge-a=2,judge-b=3' (default 2)")
    p.add_argument("--judge-modes", default="", help=f"judge route: answer mode per judge model, e.g. 'judge-c=malformed'; "
                   f"modes: {', '.join(JUDGE_MODES)}")
    return p


def _pairs(spec: str, option: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        model, sep, value = item.partition("=")
        if not sep or not model or not value:
            raise ConfigError(f"{option}: expected model=value pairs separated by commas, got {item!r}")
        out[model] = value
    return out


def _brain(spec: str) -> Brain:
    if spec == "scripted":
        return ScriptedBrain()
    if spec.startswith("builtin:") and spec.split(":", 1)[1]:
        return builtin_brain(spec.split(":", 1)[1])
    raise ConfigError(f"--brain: expected 'scripted' or 'builtin:<agent name>', got {spec!r}")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, serve until SIGINT/SIGTERM; exit code 2 on a bad option."""
    args = _parser().parse_args(argv)
    try:
        if args.host not in LOOPBACK_HOSTS:
            raise ConfigError(f"--host: the test server binds loopback only, refusing {args.host!r}; use 127.0.0.1")
        faults = Faults.parse(
            args.faults,
            seed=args.fault_seed,
            retry_after_s=args.retry_after,
            retry_after_ms=args.retry_after_ms,
            delay_s=args.delay,
            server_error_status=args.error_status,
            rpm_limit=args.rpm_limit,
            rpm_window_s=args.rpm_window,
            response_formats=[x.strip() for x in args.response_formats.split(",") if x.strip()]
            if args.response_formats is not None else None,
            context_window=args.context_window,
        )
        api_key = None
        if args.api_key_env:
            api_key = os.environ.get(args.api_key_env) or None
            if api_key is None:
                raise ConfigError(f"--api-key-env: environment variable {args.api_key_env} is not set")
        levels = {m: int(v) for m, v in _pairs(args.judge_levels, "--judge-levels").items()}
        judge = JudgeBrain(levels, _pairs(args.judge_modes, "--judge-modes"))
        server = LocalModelServer(_brain(args.brain), faults, host=args.host, port=args.port, api_key=api_key,
                                  judge=judge)
        server.start()
    except (ConfigError, ImportError, KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot bind 127.0.0.1:{args.port}: {exc}", file=sys.stderr)
        return 2
    print(f"jeval_ray test server listening on {server.url}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
