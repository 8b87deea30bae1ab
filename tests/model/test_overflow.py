"""A request too long for the model's window, as each server family says it: HTTP 400 (or
413) or an error inside the stream → ``ContextOverflow``, not retried; other 400s and 413s
stay plain ``ModelError``s. Every body is the server's own shape and wording, from its source
or from what its users quoted (cited per case)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.journal.events import SourceKind, source
from acp_agent.model.base import ContextOverflow, ModelError, ModelRequest, UserTurn
from acp_agent.model.openai import Endpoint, OpenAICompatible, RetryPolicy, Secret
from tests.model.loopback import Reply, failed, loopback

REQUEST = ModelRequest("s", 1, 1, [UserTurn([TextContent(text="hi")], source(SourceKind.USER))], [])


@dataclass(frozen=True)
class Refusal:
    family: str
    body: str
    source: str
    status: int = 400


OVERFLOWS = [
    Refusal(
        "openai",
        '{"error": {"message": "This model\'s maximum context length is 8192 tokens. However, '
        'your messages resulted in 8213 tokens. Please reduce the length of the messages.", '
        '"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
        "https://platform.openai.com/docs/guides/error-codes; body as quoted in "
        "github.com/crewAIInc/crewAI-examples#121",
    ),
    Refusal(
        "openai-configured-limit",
        '{"error": {"message": "Input tokens exceed the configured limit of 272000 tokens. Your '
        'messages resulted in 509178 tokens. Please reduce the length of the messages.", '
        '"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
        "OpenAI's newer wording: the code context_length_exceeded is what is matched",
    ),
    Refusal(
        "azure",
        '{"error": {"message": "This model\'s maximum context length is 128000 tokens. However, '
        'your messages resulted in 204308 tokens. Please reduce the length of the messages.", '
        '"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
        "https://learn.microsoft.com/azure/ai-foundry/openai/reference (Azure OpenAI returns "
        "OpenAI's error object)",
    ),
    Refusal(
        "deepseek",
        '{"error": {"message": "This model\'s maximum context length is 131072 tokens. However, '
        "you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please "
        'reduce the length of the messages or completion.", "type": "invalid_request_error", '
        '"param": null, "code": "invalid_request_error"}}',
        "https://api-docs.deepseek.com/quick_start/error_codes (400 invalid format); body as "
        "quoted in github.com/evalstate/fast-agent#621",
    ),
    Refusal(
        "vllm-0.10-flat",
        '{"object": "error", "message": "This model\'s maximum context length is 4096 tokens. '
        "However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). "
        'Please reduce the length of the messages or completion.", "type": "BadRequestError", '
        '"param": null, "code": 400}',
        "github:vllm-project/vllm vllm/entrypoints/openai/serving_engine.py "
        "(_validate_input, v0.6-v0.10: flat ErrorResponse)",
    ),
    Refusal(
        "vllm-prompt",
        '{"error": {"message": "This model\'s maximum context length is 4096 tokens. However, '
        'your request has 4176 input tokens. Please reduce the length of the input messages.", '
        '"type": "BadRequestError", "param": null, "code": 400}}',
        "github:vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (v0.10.2-v0.17)",
    ),
    Refusal(
        "vllm-max-tokens",
        '{"error": {"message": "\'max_tokens\' or \'max_completion_tokens\' is too large: 8000. '
        "This model's maximum context length is 4096 tokens and your request has 2778 input "
        'tokens (8000 > 4096 - 2778).", "type": "BadRequestError", "param": null, "code": 400}}',
        "github:vllm-project/vllm vllm/entrypoints/openai/serving_engine.py (v0.10.2-v0.17)",
    ),
    Refusal(
        "vllm-renderer",
        '{"error": {"message": "You passed 9000 input tokens and requested 1000 output tokens. '
        "However, the model's context length is only 8192 tokens, resulting in a maximum input "
        "length of 7192 tokens. Please reduce the length of the input prompt. "
        '(parameter=input_tokens, value=9000)", "type": "BadRequestError", '
        '"param": "input_tokens", "code": 400}}',
        "github:vllm-project/vllm vllm/renderers/params.py (TokenizeParams._token_len_check)",
    ),
    Refusal(
        "sglang",
        '{"object": "error", "message": "The input (40210 tokens) is longer than the model\'s '
        'context length (32768 tokens).", "type": "BadRequestError", "param": null, "code": 400}',
        "github:sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py "
        "(_validate_one_request) and serving_base.py (create_error_response)",
    ),
    Refusal(
        "sglang-total",
        '{"object": "error", "message": "Requested token count exceeds the model\'s maximum '
        "context length of 32768 tokens. You requested a total of 33000 tokens: 32000 tokens "
        "from the input messages and 1000 tokens for the completion. Please reduce the number "
        'of tokens in the input messages or the completion to fit within the limit.", '
        '"type": "BadRequestError", "param": null, "code": 400}',
        "github:sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py "
        "(validate_total_tokens)",
    ),
    Refusal(
        "llamacpp",
        '{"error": {"code": 400, "message": "request (9412 tokens) exceeds the available context '
        'size (8192 tokens), try increasing it", "type": "exceed_context_size_error", '
        '"n_prompt_tokens": 9412, "n_ctx": 8192}}',
        "github:ggml-org/llama.cpp tools/server/server-context.cpp (send_error(..., "
        "ERROR_TYPE_EXCEED_CONTEXT_SIZE)) and server-common.cpp (format_error_response: "
        "exceed_context_size_error, 400)",
    ),
    Refusal(
        "llamacpp-older",
        '{"error": {"code": 400, "message": "the request exceeds the available context size, '
        'try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 4213, '
        '"n_ctx": 4096}}',
        "github:ggml-org/llama.cpp examples/server/server.cpp (before tools/server)",
    ),
    Refusal(
        "llama-cpp-python",
        '{"error": {"message": "This model\'s maximum context length is 4096 tokens. However, '
        "you requested 5000 tokens (4500 in the messages, 500 in the completion). Please reduce "
        'the length of the messages or completion.", "type": "invalid_request_error", '
        '"param": "messages", "code": "context_length_exceeded"}}',
        "github:abetlen/llama-cpp-python llama_cpp/server/errors.py "
        "(ErrorResponseFormatters.context_length_exceeded, from llama.cpp's 'Requested tokens "
        "(N) exceed context window of M')",
    ),
    Refusal(
        "ollama",
        '{"error": "prompt too long; exceeded max context length by 4 tokens"}',
        "Ollama's OpenAI-compatible route with truncation off; body as quoted in other "
        "clients' overflow tests (error as a bare string)",
    ),
    Refusal(
        "openrouter",
        '{"error": {"message": "This endpoint\'s maximum context length is 163840 tokens. '
        "However, you requested about 170000 tokens (170000 of text input). Please reduce the "
        'length of either one, or use the \\"middle-out\\" transform to compress your prompt '
        'automatically.", "code": 400}}',
        "https://openrouter.ai/docs/api-reference/errors (400 Bad Request)",
    ),
    Refusal(
        "mistral",
        '{"object": "error", "message": "Prompt contains 240000 tokens, too large for model with '
        '128000 maximum context length", "type": "invalid_request_error", "param": null, '
        '"code": null}',
        "https://docs.mistral.ai/resources/known-limitations (wording as other clients quote it)",
    ),
    Refusal(
        "groq",
        '{"error": {"message": "Please reduce the length of the messages or completion.", '
        '"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}',
        "https://console.groq.com/docs/errors; body as quoted in "
        "github.com/thepersonalaicompany/amurex-backend#51",
    ),
    Refusal(
        "together",
        '{"error": {"message": "The input (516368 tokens) is longer than the '
        'model\'s context length (262144 tokens).", "type": "invalid_request_error", '
        '"param": null, "code": null}}',
        "https://docs.together.ai/docs/error-codes (400 invalid request)",
    ),
    Refusal(
        "tgi",
        '{"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. '
        'Given: 4000 `inputs` tokens and 200 `max_new_tokens`", "error_type": "validation"}',
        "github:huggingface/text-generation-inference router/src/validation.rs (MaxTotalTokens)",
    ),
    Refusal(
        "proxy-413",
        '{"error": {"message": "This model\'s maximum context length is 131072 tokens. However, '
        'you requested 140000 tokens.", "type": "invalid_request_error"}}',
        "a gateway answering 413 with the upstream's context message",
        status=413,
    ),
]

NOT_OVERFLOWS = [
    Refusal(
        "openai-output-limit",
        '{"error": {"message": "max_tokens is too large: 199000. This model supports at most '
        '32768 completion tokens, whereas you provided 199000.", "type": "invalid_request_error", '
        '"param": "max_tokens", "code": "invalid_value"}}',
        "OpenAI: an output bound over the model's cap is a configuration error, not an overflow",
    ),
    Refusal(
        "deepseek-reasoning-content",
        '{"error": {"message": "The `reasoning_content` in the thinking mode must be passed back '
        'to the API.", "type": "invalid_request_error", "param": null, '
        '"code": "invalid_request_error"}}',
        "DeepSeek thinking mode (api-docs.deepseek.com/guides/thinking_mode)",
    ),
    Refusal(
        "groq-413-rate-limit",
        '{"error": {"message": "Request too large for model `llama-3.3-70b-versatile` in '
        "organization `org_1` service tier `on_demand` on tokens per minute (TPM): Limit 6000, "
        'Requested 7000, please reduce your message size and try again.", "type": "tokens", '
        '"code": "rate_limit_exceeded"}}',
        "https://console.groq.com/docs/rate-limits (413: a per-minute budget, not the window)",
        status=413,
    ),
]


async def refuse(refusal: Refusal, tmp_path: Path) -> ModelError:
    body = tmp_path / f"{refusal.family}.json"
    body.write_text(refusal.body, "utf-8")
    async with loopback(failed(refusal.status, str(body)), Reply("text.sse")) as server:
        endpoint = Endpoint(refusal.family, server.base_url, Secret("sk-x"), "X_API_KEY")
        model = OpenAICompatible(endpoint, "m", RetryPolicy(max_retries=3, base_delay_s=0.001))
        try:
            with pytest.raises(ModelError) as failure:
                [_ async for _ in model.stream(REQUEST)]
        finally:
            await model.aclose()
        assert len(server.requests) == 1, "a refusal is final: never retried"
    return failure.value


@pytest.mark.parametrize("refusal", OVERFLOWS, ids=[r.family for r in OVERFLOWS])
async def test_each_family_s_overflow_is_context_overflow(refusal: Refusal, tmp_path: Path) -> None:
    assert refusal.source
    error = await refuse(refusal, tmp_path)
    assert isinstance(error, ContextOverflow)
    assert "the context window was exceeded" in str(error)
    assert f"HTTP {refusal.status}" in str(error)


@pytest.mark.parametrize("refusal", NOT_OVERFLOWS, ids=[r.family for r in NOT_OVERFLOWS])
async def test_other_refusals_stay_plain_errors(refusal: Refusal, tmp_path: Path) -> None:
    assert refusal.source
    error = await refuse(refusal, tmp_path)
    assert not isinstance(error, ContextOverflow)


@pytest.mark.parametrize(
    "frame",
    [
        # SGLang: a validation error inside the chat stream (serving_chat.py, see the corpus
        # case streams/sglang/wrapped-error).
        'data: {"error": {"object": "error", "message": "The input (40210 tokens) is longer '
        'than the model\'s context length (32768 tokens).", "type": "BadRequestError", '
        '"param": null, "code": 400}}',
        # llama.cpp before tools/server: an SSE error field (streams/llamacpp/old-error-field).
        'error: {"code":400,"message":"the request exceeds the available context size, try '
        'increasing it","type":"exceed_context_size_error","n_prompt_tokens":4213,"n_ctx":4096}',
    ],
    ids=["sglang", "llamacpp-old"],
)
async def test_an_overflow_reported_inside_the_stream_is_context_overflow(
    frame: str, tmp_path: Path
) -> None:
    stream = tmp_path / "overflow.sse"
    stream.write_text(f"{frame}\n\ndata: [DONE]\n\n", "utf-8")
    async with loopback(Reply(str(stream))) as server:
        model = OpenAICompatible(Endpoint("s", server.base_url), "m", RetryPolicy(max_retries=0))
        with pytest.raises(ContextOverflow, match="context window was exceeded"):
            [_ async for _ in model.stream(REQUEST)]
        await model.aclose()
