// Bedrock Runtime clients that send each call several times through the
// gateway (the AWS SDK ignores x-should-retry) or can hang a worker.
import { BedrockRuntimeClient, ConverseCommand } from "@aws-sdk/client-bedrock-runtime";
import * as br from "@aws-sdk/client-bedrock-runtime";
import { NodeHttpHandler } from "@smithy/node-http-handler";

const endpoint = "http://127.0.0.1:8080/bedrock";

export const plain = new BedrockRuntimeClient({ region: "us-east-1", endpoint }); // want: retries timeout

export const fiveTries = new BedrockRuntimeClient({ endpoint, maxAttempts: 5, requestHandler: { requestTimeout: 35_000 } }); // want: retries-on

export const noRequestTimeout = new br.BedrockRuntimeClient({ // want: timeout
  endpoint,
  maxAttempts: 1,
  requestHandler: new NodeHttpHandler({ connectionTimeout: 1_000 }),
});

export const short = new br.BedrockRuntime({ maxAttempts: 1, requestHandler: new NodeHttpHandler({ requestTimeout: 10_000 }) }); // want: short-timeout

const handler = { requestTimeout: 0 };
export const zero = new BedrockRuntimeClient({ maxAttempts: 1, requestHandler: handler }); // want: timeout

export const send = (c) => c.send(new ConverseCommand({ modelId: "m" }));
