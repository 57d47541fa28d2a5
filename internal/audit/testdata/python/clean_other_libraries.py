"""Same class names, other libraries: not the SDK clients."""
from langchain_openai import OpenAI
from llama_index.llms.anthropic import Anthropic as LlamaAnthropic

llm = OpenAI(model="gpt-4o-mini")
other = LlamaAnthropic(model="claude-sonnet-4-5")


class AsyncOpenAI:
    def __init__(self) -> None:
        self.calls = 0


fake = AsyncOpenAI()
