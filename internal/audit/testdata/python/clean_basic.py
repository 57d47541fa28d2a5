"""Clients built the way the gateway wants them."""
import os

import anthropic
import httpx
from openai import AsyncOpenAI, OpenAI

client = OpenAI(max_retries=0, timeout=30)

async_client = AsyncOpenAI(
    api_key=os.environ["OPENAI_API_KEY"],
    base_url="http://127.0.0.1:8080/openai/v1",
    organization=None,
    max_retries=0,
    timeout=httpx.Timeout(30.0, connect=5.0),
)

chained = OpenAI().with_options(max_retries=0, timeout=30)
claude = anthropic.Anthropic(max_retries=0, http_client=httpx.Client(timeout=60))

CLIENT_KWARGS = {"max_retries": 0, "timeout": 60.0}
spread = OpenAI(**CLIENT_KWARGS)
spread_dict = OpenAI(**dict(max_retries=0, timeout=60.0))

MAX_RETRIES = 0
REQUEST_TIMEOUT: float = 30
from_consts = anthropic.AsyncAnthropic(max_retries=MAX_RETRIES, timeout=REQUEST_TIMEOUT)

quick = client.with_options(max_retries=0, timeout=5)
longer = client.with_options(timeout=120)


def ask(prompt: str) -> str:
    resp = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt}],
        timeout=15,
    )
    return resp.choices[0].message.content
