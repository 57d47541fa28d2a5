import anthropic
import httpx
import openai as oa
from anthropic import AnthropicBedrock
from anthropic import AsyncAnthropic as AA
from openai import (
    Client,
    OpenAI as OAI,
)

claude = anthropic.Anthropic(max_retries=2, timeout=60)  # want: retries-on


async def main() -> None:
    ac = AA(timeout=httpx.Timeout(30.0, connect=5.0))  # want: retries
    await ac.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[])


bedrock = AnthropicBedrock(aws_region="us-east-1", max_retries=0)  # want: timeout
legacy = oa.OpenAI(max_retries=0, timeout=None)  # want: no-timeout
plain = Client()  # want: retries timeout
vertex = anthropic.AnthropicVertex(region="us-east5", project_id="agents-prod")  # want: retries timeout
renamed = OAI(base_url="http://127.0.0.1:8080/openai/v1")  # want: retries timeout
azure = oa.AzureOpenAI(api_version="2024-06-01", max_retries=-1, timeout=10)  # want: retries-on short-timeout
