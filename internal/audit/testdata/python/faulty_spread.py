from openai import OpenAI

BASE = {"timeout": 30}
MAX_RETRIES = 3

client = OpenAI(**BASE)  # want: retries
override = OpenAI(**{**BASE, "max_retries": 4})  # want: retries-on

kw = dict(max_retries=1, timeout=5)
from_dict = OpenAI(**kw)  # want: retries-on short-timeout
from_const = OpenAI(max_retries=MAX_RETRIES, timeout=10)  # want: retries-on short-timeout
