import httpx
import openai
from openai import NOT_GIVEN, OpenAI

client = OpenAI(max_retries=0, timeout=20)  # want: short-timeout


def slow_batch(prompt: str) -> str:
    resp = client.with_options(max_retries=3, timeout=600).chat.completions.create(  # want: retries-on
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt}],
    )
    return resp.choices[0].message.content


chained = OpenAI().with_options(timeout=10)  # want: retries short-timeout
forever = client.with_options(timeout=None)  # want: no-timeout
httpx_default = OpenAI(max_retries=0, http_client=httpx.Client())  # want: timeout
httpx_forever = OpenAI(max_retries=0, http_client=httpx.Client(timeout=None))  # want: no-timeout
copied = OpenAI(timeout=5).copy(max_retries=1)  # want: retries-on short-timeout
unbounded = OpenAI(max_retries=0, timeout=httpx.Timeout(None, connect=5.0))  # want: no-timeout
defaults = OpenAI(max_retries=openai.NOT_GIVEN, timeout=NOT_GIVEN)  # want: retries timeout
bounded = OpenAI(max_retries=0, timeout=httpx.Timeout(None, connect=5.0, read=60.0))
