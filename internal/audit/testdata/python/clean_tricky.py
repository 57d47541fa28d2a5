"""Wrapper around the OpenAI SDK.

Never write ``client = OpenAI()`` here: build it with max_retries=0.
    Example: Anthropic(max_retries=2)
"""
from anthropic import Anthropic
from openai import OpenAI

from .settings import settings

# client = OpenAI()   (the old way, which retried behind the gateway)
HELP = "Use OpenAI() with max_retries=0"
SQL = '''
    SELECT 'OpenAI(' FROM clients -- Anthropic(
'''
PATTERN = r"OpenAI\(\s*\)"
BYTES = rb'Anthropic()'
ESCAPED = "say \"OpenAI()\" twice"
CONTINUED = "OpenAI(\
)"


def describe(model: str, d: dict) -> str:
    return f"{model}: {d["name"]} uses {'OpenAI()'} and {{OpenAI()}}"


nested = f"{f'{OpenAI.__name__}()'}: {Anthropic.__name__!r:>{20}}"
multi = f"""
    {"Anthropic()"} and OpenAI()
"""


def typed(client: OpenAI) -> OpenAI:
    return client


def is_client(x: object) -> bool:
    return isinstance(x, (OpenAI, Anthropic))


class Wrapper(OpenAI):
    pass


def make(**kwargs) -> OpenAI:
    return OpenAI(**kwargs)


def make_with(max_retries: int, timeout: float) -> Anthropic:
    return Anthropic(max_retries=max_retries, timeout=timeout)


configured = OpenAI(max_retries=settings.max_retries, timeout=settings.timeout)
one_off = OpenAI()  # sluice:ignore: a maintenance script that talks to the provider directly
