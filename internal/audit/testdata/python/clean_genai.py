"""Google GenAI clients with a timeout, and near-misses that are not clients."""
from google import genai
from google.genai import types
from google.cloud import storage
import google.genai as gg

GATEWAY = "http://127.0.0.1:8080/gemini"

client = genai.Client(
    http_options=types.HttpOptions(base_url=GATEWAY, timeout=35_000),
)

as_dict = gg.Client(http_options={"base_url": GATEWAY, "timeout": 35_000})

HTTP = types.HttpOptions(base_url=GATEWAY, timeout=35_000)
bound = genai.Client(http_options=HTTP)

one_attempt = genai.Client(
    http_options=types.HttpOptions(timeout=35_000, retry_options=types.HttpRetryOptions(attempts=1)),
)
no_retries = genai.Client(http_options={"timeout": 35_000, "retry_options": None})


def from_caller(opts):
    return genai.Client(http_options=opts)


# Other libraries' Client classes are not google-genai's.
bucket = storage.Client()
config = types.GenerateContentConfig(temperature=0)
ignored = genai.Client()  # sluice:ignore one-off notebook
