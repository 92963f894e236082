"""An OpenAI-compatible chat server on 127.0.0.1 whose answer is a function of the request, for
tests of answers that never parse and of secrets a server echoes back."""

from __future__ import annotations

from .openai_stub import Behaviour, ScriptedOpenAIServer


def answers(text: str, finish_reason: str = "stop") -> Behaviour:
    return lambda body, headers: (200, text, finish_reason)


def echoes_key_in_401(body: dict, headers: dict[str, str]) -> tuple[int, str, str]:
    """What a careless server does: the 401 says which key it refused, in full."""
    key = headers.get("authorization", "").removeprefix("Bearer ")
    return 401, f"Incorrect API key provided: {key}. You can find your key at ...", ""


def LoopbackServer(behaviour: Behaviour) -> ScriptedOpenAIServer:  # noqa: N802 (used as a class)
    return ScriptedOpenAIServer([], behaviour=behaviour, prompt_tokens=7)
