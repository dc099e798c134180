"""How a retrieval task's queries and documents become vectors: ONE function (``embed_side``), with the
model's own prompt handling.

A side (queries or documents) is embedded with its prompt: a text given by the user (``--query-prompt``), or
a prompt the model names (``--query-prompt-name``, from its sentence-transformers ``config_sentence_transformers.json``:
``isoscope.encode.recipe.resolve_prompt``), else the model's prompt called ``query`` / ``document`` when it has
one (sentence-transformers' ``encode_query`` / ``encode_document`` rule), else its default prompt, else none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

    from isoscope.cache import ArrayCache
    from isoscope.encode.embed import EmbedConfig
    from isoscope.encode.endpoints import Endpoint
    from isoscope.encode.models import Encoder
    from isoscope.encode.pooling import Pooling
    from isoscope.encode.remote import EndpointCache

Side = Literal["query", "document"]
SIDES: tuple[Side, ...] = ("query", "document")


def side_prompt(encoder: Encoder, side: Side, *, name: str | None = None, text: str | None = None) -> str:
    """The prompt text one side is embedded with: ``text`` as given, else the model's prompt ``name``, else its
    prompt named after the side (``query``, ``document``), else its default prompt, else "" (a model without a
    sentence-transformers card has no prompts). InputError naming the model's prompts for an unknown ``name``."""
    from isoscope.encode.recipe import resolve_prompt

    recipe = getattr(encoder, "recipe", None)
    card = getattr(recipe, "card", None)
    if text is None and name is None and card is not None and side in (card.prompts or {}):
        name = side
    return resolve_prompt(card, name, text, model=encoder.name)


def embed_side(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    pooling: Pooling = None,
    prompt: str = "",
    config: EmbedConfig | None = None,
    cache: ArrayCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """The vectors (n, d) float32 of one side's ``texts``, each with ``prompt`` in front, as the model's recipe
    runs a prompt (``isoscope.encode.embed.EmbedConfig.prompt``: its tokens left out of the pooling where the
    recipe says so, and part of the cache key).

    Every query and document of a retrieval run is embedded here (the CLI, ``Space.retrieval``, the dashboard).
    """
    from dataclasses import replace

    from isoscope.encode.embed import EmbedConfig, encode

    config = replace(config or EmbedConfig(), prompt_name=None, prompt=prompt)
    return encode(encoder, texts, pooling, config=config, progress=progress, cache=cache)


def embed_side_endpoint(
    endpoint: Endpoint,
    texts: Sequence[str],
    *,
    prompt: str = "",
    cache: EndpointCache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """``embed_side`` for an embeddings endpoint (``isoscope.encode.remote.embed_endpoint``): ``prompt + text``."""
    from isoscope.encode.remote import embed_endpoint

    items = [prompt + t for t in texts] if prompt else list(texts)
    return embed_endpoint(endpoint, items, progress=progress, cache=cache)
