// Drives Google's @google/genai Node SDK through the gateway at
// $GATEWAY_URL (e.g. http://127.0.0.1:PORT/gemini), with the fake provider
// behind it, and prints what the SDK made of each answer as one JSON
// object. A stream the gateway had to end early shows as the SDK's error.
// Any unexpected SDK error fails the script with exit status 1 and the
// error on stderr. Run by internal/gateway/genai_test.go.
import { GoogleGenAI } from '@google/genai';

const ai = new GoogleGenAI({
  apiKey: process.env.GEMINI_KEY,
  // The only change an application makes: the gateway's address. The SDK
  // sends its key in x-goog-api-key and does not retry unless told to.
  httpOptions: { baseUrl: process.env.GATEWAY_URL, timeout: 10_000 },
});
const model = 'gemini-test';
const contents = 'hi';
const out = {};

// A plain call.
const plain = await ai.models.generateContent({ model, contents, config: { maxOutputTokens: 64 } });
out.plain = {
  text: plain.text,
  finishReason: plain.candidates[0].finishReason,
  outputTokens: plain.usageMetadata.candidatesTokenCount,
  modelVersion: plain.modelVersion,
};

// A stream (streamGenerateContent?alt=sse).
let text = '';
let chunks = 0;
let last;
for await (const chunk of await ai.models.generateContentStream({ model, contents })) {
  text += chunk.text ?? '';
  chunks++;
  last = chunk;
}
out.stream = { text, chunks, finishReason: last.candidates[0].finishReason, outputTokens: last.usageMetadata.candidatesTokenCount };

// A stream the provider cuts after two chunks: the gateway ends it with an
// error event in Google's shape, which the SDK raises.
text = '';
try {
  const cut = await ai.models.generateContentStream({
    model, contents, config: { httpOptions: { headers: { 'Sluice-Fake-Script': 'stream:cut-after=2' } } },
  });
  for await (const chunk of cut) {
    text += chunk.text ?? '';
  }
  out.cut = { text, error: null };
} catch (e) {
  out.cut = { text, error: e.name, status: e.status, message: e.message };
}

process.stdout.write(JSON.stringify(out));
