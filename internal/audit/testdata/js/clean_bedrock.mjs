// Bedrock Runtime clients through the gateway, each with one attempt and a
// timeout above the gateway's total, and near-misses that are not clients.
import { BedrockRuntimeClient } from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler, NodeHttp2Handler } from "@smithy/node-http-handler";
import { ConfiguredRetryStrategy } from "@smithy/util-retry";
import { BedrockClient } from "@aws-sdk/client-bedrock";

const endpoint = "http://127.0.0.1:8080/bedrock";

export const client = new BedrockRuntimeClient({
  region: "us-east-1",
  endpoint,
  maxAttempts: 1,
  requestHandler: { requestTimeout: 35_000 }, // the default handler, HTTP/2 (h2c at the gateway)
});

export const http1 = new BedrockRuntimeClient({ endpoint, maxAttempts: 1, requestHandler: new NodeHttpHandler({ requestTimeout: 35_000, connectionTimeout: 1_000 }) });
export const http2 = new BedrockRuntimeClient({ endpoint, maxAttempts: 1, requestHandler: NodeHttp2Handler.create({ requestTimeout: 40_000 }) });

const shared = { endpoint, maxAttempts: 1, requestHandler: { requestTimeout: 35_000 } };
export const spread = new BedrockRuntimeClient({ ...shared, region: "eu-west-1" });

export const strategy = new BedrockRuntimeClient({ retryStrategy: new ConfiguredRetryStrategy(1), requestHandler: { requestTimeout: 35_000 } });

export function fromCaller(handler) {
  return new BedrockRuntimeClient({ maxAttempts: 1, requestHandler: handler });
}

// The control-plane client is not a runtime client.
export const control = new BedrockClient({ region: "us-east-1" });
