"""``make_client``: the chat client of a model entry's provider (above both clients, so neither imports it)."""

from __future__ import annotations

from typing import Any

from jeval_ray.models._client import ChatClient
from jeval_ray.models.anthropic import AnthropicClient
from jeval_ray.models.config import ModelConfig
from jeval_ray.models.openai_compat import OpenAICompatClient


def make_client(config: ModelConfig, **kwargs: Any) -> ChatClient:
    """The client for ``config.provider`` (keyword arguments go to ``ChatClient``)."""
    cls = AnthropicClient if config.provider == "anthropic" else OpenAICompatClient
    return cls(config, **kwargs)


__all__ = ["make_client"]
