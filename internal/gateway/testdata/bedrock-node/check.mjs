// Drives the AWS SDK for JavaScript's Bedrock Runtime client through the
// gateway at $GATEWAY_URL (e.g. http://127.0.0.1:PORT/bedrock), with the
// fake provider behind it, and prints what the SDK made of each answer as
// one JSON object. The client keeps its default request handler, which
// speaks HTTP/2 (with prior knowledge on an http:// endpoint). Any SDK
// error fails the script with exit status 1 and the error on stderr. Run
// by internal/gateway/bedrock_node_test.go.
import {
  BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';

const client = new BedrockRuntimeClient({
  region: process.env.AWS_REGION,
  // The only change an application makes: the gateway's address. The
  // access key id is the client's token; the secret is not checked.
  endpoint: process.env.GATEWAY_URL,
  credentials: { accessKeyId: process.env.CLIENT_KEY, secretAccessKey: 'unused' },
  maxAttempts: 1,
});
const messages = [{ role: 'user', content: [{ text: 'hi' }] }];
const out = {};

async function stream(modelId) {
  const res = await client.send(new ConverseStreamCommand({ modelId, messages }));
  let text = '';
  let outputTokens = 0;
  for await (const ev of res.stream) {
    text += ev.contentBlockDelta?.delta?.text ?? '';
    outputTokens = ev.metadata?.usage?.outputTokens ?? outputTokens;
  }
  return { text, outputTokens };
}

const plain = await client.send(new ConverseCommand({
  modelId: process.env.MODEL_ID, messages, inferenceConfig: { maxTokens: 64 },
}));
out.plain = { text: plain.output.message.content[0].text, outputTokens: plain.usage.outputTokens };
out.stream = await stream(process.env.MODEL_ID);
out.arnStream = await stream(process.env.MODEL_ARN);
client.destroy();
process.stdout.write(JSON.stringify(out));
