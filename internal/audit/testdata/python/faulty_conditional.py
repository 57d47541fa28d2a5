"""Conditional spreads that cannot hide what is missing."""
import os

from openai import OpenAI

local = os.environ.get("LOCAL") == "1"

a = OpenAI(**({"max_retries": 0} if local else {}))  # want: timeout
b = OpenAI(**({"max_retries": 0} if local else None), base_url="http://127.0.0.1:8080/openai/v1")  # want: timeout
c = OpenAI(timeout=30, **({"max_retries": 5} if local else {"max_retries": 5}))  # want: retries-on
d = OpenAI(timeout=30, **(local and {"base_url": "http://x"} or {}))  # want: retries
