"""Chat helpers for the support bot."""
import os

from openai import AsyncOpenAI, AzureOpenAI, OpenAI

client = OpenAI()  # want: retries timeout

retrying = OpenAI(api_key=os.environ["OPENAI_API_KEY"], max_retries=5)  # want: retries-on timeout

async_client = AsyncOpenAI(timeout=30.0)  # want: retries

azure = AzureOpenAI(  # want: retries short-timeout
    api_version="2024-06-01",
    azure_endpoint=os.environ["AZURE_OPENAI_ENDPOINT"],
    api_key=os.environ["AZURE_OPENAI_API_KEY"],
    timeout=20,
)


def summarize(text: str) -> str:
    resp = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"Summarize: {text}"}],
    )
    return resp.choices[0].message.content


class Summarizer:
    def __init__(self, model: str = "gpt-4o-mini") -> None:
        self.model = model
        self.client = OpenAI(  # want: retries
            timeout=45,
            default_headers={"X-Team": "support"},
        )

    async def run(self, text: str) -> str:
        async with AsyncOpenAI() as ac:  # want: retries timeout
            r = await ac.chat.completions.create(model=self.model, messages=[])
        return r.choices[0].message.content
