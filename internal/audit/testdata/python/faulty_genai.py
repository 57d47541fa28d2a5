"""Google GenAI clients that can hang a worker."""
from google import genai
from google.genai import types
import google.genai as gg
from google.genai import Client as GeminiClient

plain = genai.Client()  # want: timeout

base_only = genai.Client(  # want: timeout
    api_key="test",
    http_options=types.HttpOptions(base_url="http://127.0.0.1:8080/gemini"),
)

as_dict = gg.Client(http_options={"base_url": "http://127.0.0.1:8080/gemini"})  # want: timeout

OPTIONS = types.HttpOptions(api_version="v1", timeout=None)
explicit_none = GeminiClient(http_options=OPTIONS)  # want: timeout

retrying = genai.Client(  # want: retries-on
    http_options=types.HttpOptions(timeout=35_000, retry_options=types.HttpRetryOptions()),
)

RETRY = {"attempts": 3, "initial_delay": 1.0}
three = genai.Client(http_options={"timeout": 35_000, "retry_options": RETRY})  # want: retries-on
