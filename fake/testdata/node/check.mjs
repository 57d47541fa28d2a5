// Drives the official OpenAI Node SDK against the fake provider at
// $FAKE_BASE_URL (e.g. http://127.0.0.1:PORT/v1) and prints what the SDK
// made of each answer as one JSON object. Any SDK error fails the script
// with exit status 1 and the error on stderr. Run by fake/node_test.go.
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.FAKE_BASE_URL,
  apiKey: 'sk-fake',
  maxRetries: 0,
  timeout: 10_000,
});
const model = 'gpt-test';
const out = {};

// Responses API, streamed through the helper that rebuilds the response.
const stream = client.responses.stream({ model, input: 'hi' });
const events = [];
stream.on('event', (e) => events.push(e.type));
let deltas = '';
stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
const final = await stream.finalResponse();
out.responsesStream = {
  events,
  deltas,
  status: final.status,
  outputText: final.output_text,
  contentText: final.output[0].content[0].text,
  outputTokens: final.usage.output_tokens,
};

// Responses API, not streamed.
const resp = await client.responses.create({ model, input: 'hi' });
out.responses = { status: resp.status, outputText: resp.output_text, outputTokens: resp.usage.output_tokens };

// Chat completions, not streamed.
const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
out.chat = { text: chat.choices[0].message.content, completionTokens: chat.usage.completion_tokens };

// Chat completions, streamed with a usage chunk.
let text = '';
let usage = null;
const chunks = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true },
});
for await (const chunk of chunks) {
  text += chunk.choices[0]?.delta?.content ?? '';
  if (chunk.usage) usage = chunk.usage;
}
out.chatStream = { text, completionTokens: usage?.completion_tokens };

// Chat completions through the stream helper that rebuilds the completion.
const helper = client.chat.completions.stream({ model, messages: [{ role: 'user', content: 'hi' }] });
const done = await helper.finalChatCompletion();
out.chatStreamHelper = { text: done.choices[0].message.content, finishReason: done.choices[0].finish_reason };

// A drill's overloaded step, not streamed: the SDK must raise the
// provider's error, not take an event stream for the answer.
try {
  const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] },
    { headers: { 'Sluice-Fake-Script': 'overloaded' } });
  out.overloaded = { answered: JSON.stringify(r) };
} catch (e) {
  out.overloaded = { status: e.status, type: e.type ?? e.error?.type, name: e.constructor.name };
}

process.stdout.write(JSON.stringify(out) + '\n');
