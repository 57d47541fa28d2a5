"""Bedrock Runtime clients that send each call several times through the
gateway (botocore ignores x-should-retry) or wait on botocore's defaults."""
import boto3
from botocore.config import Config

GATEWAY = "http://127.0.0.1:8080/bedrock"

plain = boto3.client("bedrock-runtime", endpoint_url=GATEWAY)  # want: retries timeout

standard = boto3.client(  # want: retries
    "bedrock-runtime",
    endpoint_url=GATEWAY,
    config=Config(retries={"mode": "standard"}, read_timeout=35, connect_timeout=5),
)

# max_attempts counts retries: 1 is two attempts.
one_retry = boto3.client("bedrock-runtime", config=Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=35))  # want: retries-on

TOTAL = Config(retries={"total_max_attempts": 3}, read_timeout=10)
session = boto3.Session(region_name="us-east-1")
short = session.client(service_name="bedrock-runtime", config=TOTAL)  # want: retries-on short-timeout

no_read_timeout = boto3.client("bedrock-runtime", config=Config(retries={"total_max_attempts": 1}, read_timeout=None))  # want: no-timeout
