// Drives the official OpenAI Node SDK's AzureOpenAI client against the
// gateway's azure route at $AZURE_ENDPOINT (the fake behind it), a call
// and a stream, and prints what the SDK made of each as one JSON object.
// Any SDK error fails the script with exit status 1 and the error on
// stderr. The SDK is the one pinned in fake/testdata/node (installed by
// "npm ci --prefix fake/testdata/node"), imported by path. Run by
// internal/gateway/azure_node_test.go.
import { AzureOpenAI } from '../../../../fake/testdata/node/node_modules/openai/index.mjs';

const client = new AzureOpenAI({
  endpoint: process.env.AZURE_ENDPOINT,
  apiKey: 'az-sdk-key',
  apiVersion: '2024-10-21',
  maxRetries: 0,
  timeout: 10_000,
});
const out = {};

// A call: the SDK puts the model in the path as the deployment.
const chat = await client.chat.completions.create({
  model: 'gpt4o-prod',
  messages: [{ role: 'user', content: 'hi' }],
});
out.chat = {
  text: chat.choices[0].message.content,
  completionTokens: chat.usage.completion_tokens,
};

// A stream, through a client bound to one deployment.
const bound = new AzureOpenAI({
  endpoint: process.env.AZURE_ENDPOINT,
  apiKey: 'az-sdk-key',
  apiVersion: '2024-10-21',
  deployment: 'gpt4o-mini-prod',
  maxRetries: 0,
  timeout: 10_000,
});
const stream = await bound.chat.completions.create({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
});
let text = '';
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? '';
}
out.stream = { text, chunks };

process.stdout.write(JSON.stringify(out));
