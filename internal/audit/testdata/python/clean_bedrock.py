"""Bedrock Runtime clients through the gateway with one attempt and a read
timeout above the gateway's total, and calls that are not such clients."""
import boto3
import botocore.config

GATEWAY = "http://127.0.0.1:8080/bedrock"

client = boto3.client(
    "bedrock-runtime",
    endpoint_url=GATEWAY,
    config=botocore.config.Config(retries={"total_max_attempts": 1}, read_timeout=35, connect_timeout=5),
)

RETRIES = {"max_attempts": 0, "mode": "standard"}
CONFIG = botocore.config.Config(retries=RETRIES, read_timeout=40)
session = boto3.session.Session()
runtime = session.client("bedrock-runtime", config=CONFIG)


def from_caller(config):
    return boto3.client("bedrock-runtime", config=config)


control = boto3.client("bedrock")  # the control plane, not the runtime
s3 = boto3.client("s3")
