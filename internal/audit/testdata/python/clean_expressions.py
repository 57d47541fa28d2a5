"""Settings the audit cannot pin down statically, or that are set by an
expression: none of these is a finding."""
import os

import httpx
from anthropic import AnthropicBedrock, AsyncAnthropicVertex
from openai import OpenAI

TIMEOUT = float(os.environ.get("OPENAI_TIMEOUT", "35"))
behind_gateway = os.environ.get("SLUICE") == "1"

a = OpenAI(max_retries=0, timeout=httpx.Timeout(30.0))
b = OpenAI(max_retries=0, timeout=httpx.Timeout(30.0, connect=5.0))
c = OpenAI(max_retries=0, timeout=60 * 5)
d = OpenAI(max_retries=0, timeout=TIMEOUT)
e = OpenAI(max_retries=0, **({"timeout": 35} if behind_gateway else {}))
f = OpenAI(**({"max_retries": 0, "timeout": 35} if behind_gateway else dict(timeout=TIMEOUT)))
g = OpenAI(timeout=TIMEOUT, **(behind_gateway and {"max_retries": 0} or {}))

# Bedrock and Vertex go through the gateway's bedrock and vertex routes,
# with the SDK's retries at 0 like any Anthropic client.
bedrock = AnthropicBedrock(aws_region="us-east-1", max_retries=0, timeout=60.0)
vertex = AsyncAnthropicVertex(region="us-east5", project_id="p", max_retries=0, timeout=httpx.Timeout(120.0))
