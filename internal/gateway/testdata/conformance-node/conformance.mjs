// Drives the official OpenAI and Anthropic Node SDKs (pinned in this
// directory's package.json, installed by "npm ci --prefix
// internal/gateway/testdata/conformance-node") against the gateway at
// $GATEWAY: one call through its /openai route, one through /anthropic,
// streamed when $STREAM is 1, offering the tools get_weather and get_time
// when $TOOLS is 1. It prints what each SDK made of its answer as one
// JSON object: {"openai": OUTCOME, "anthropic": OUTCOME}, an OUTCOME being
// {id, text, calls: [{id, name, args}], stop, usage: {input, output,
// cacheRead, cacheWrite}, argDeltas}. Any SDK error fails the script with
// exit status 1 and the error on stderr. Run by
// internal/gateway/conformance_node_test.go.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const base = process.env.GATEWAY;
const stream = process.env.STREAM === '1';
const withTools = process.env.TOOLS === '1';
const question = 'What is the weather in Paris?';
const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const names = ['get_weather', 'get_time'];

async function viaOpenAI() {
  const client = new OpenAI({ baseURL: base + '/openai/v1', apiKey: 'sk-test', maxRetries: 0, timeout: 10_000 });
  const params = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] };
  if (withTools) {
    params.tools = names.map((name) => ({ type: 'function', function: { name, description: 'Tells ' + name, parameters: schema } }));
  }
  const out = { id: '', text: '', calls: [], stop: '', usage: null, argDeltas: 0 };
  const usage = (u) => {
    const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    return { input: u.prompt_tokens - cached, output: u.completion_tokens, cacheRead: cached, cacheWrite: 0 };
  };
  if (!stream) {
    const got = await client.chat.completions.create(params);
    const ch = got.choices[0];
    out.id = got.id;
    out.text = ch.message.content ?? '';
    out.stop = ch.finish_reason;
    out.calls = (ch.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments }));
    out.usage = usage(got.usage);
    return out;
  }
  const s = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  const calls = [];
  for await (const chunk of s) {
    out.id ||= chunk.id;
    if (chunk.usage) out.usage = usage(chunk.usage);
    for (const ch of chunk.choices) {
      out.text += ch.delta?.content ?? '';
      for (const tc of ch.delta?.tool_calls ?? []) {
        const c = (calls[tc.index] ??= { id: '', name: '', args: '' });
        if (tc.id) c.id = tc.id;
        if (tc.function?.name) c.name += tc.function.name;
        if (tc.function?.arguments) {
          c.args += tc.function.arguments;
          if (tc.index === 0) out.argDeltas++;
        }
      }
      if (ch.finish_reason) out.stop = ch.finish_reason;
    }
  }
  out.calls = calls;
  return out;
}

async function viaAnthropic() {
  const client = new Anthropic({ baseURL: base + '/anthropic', apiKey: 'sk-ant-test', maxRetries: 0, timeout: 10_000 });
  const params = { model: 'claude-haiku-4-5', max_tokens: 256, messages: [{ role: 'user', content: question }] };
  if (withTools) {
    params.tools = names.map((name) => ({ name, description: 'Tells ' + name, input_schema: schema }));
  }
  const out = { id: '', text: '', calls: [], stop: '', usage: null, argDeltas: 0 };
  let m;
  if (!stream) {
    m = await client.messages.create(params);
  } else {
    const s = client.messages.stream(params);
    let first = -1;
    for await (const ev of s) {
      if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use' && first < 0) first = ev.index;
      if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta' && ev.index === first && ev.delta.partial_json !== '') {
        out.argDeltas++;
      }
    }
    m = await s.finalMessage();
  }
  for (const b of m.content) {
    if (b.type === 'text') out.text += b.text;
    if (b.type === 'tool_use') out.calls.push({ id: b.id, name: b.name, args: JSON.stringify(b.input) });
  }
  out.id = m.id;
  out.stop = m.stop_reason;
  out.usage = {
    input: m.usage.input_tokens,
    output: m.usage.output_tokens,
    cacheRead: m.usage.cache_read_input_tokens ?? 0,
    cacheWrite: m.usage.cache_creation_input_tokens ?? 0,
  };
  return out;
}

const result = { openai: await viaOpenAI(), anthropic: await viaAnthropic() };
process.stdout.write(JSON.stringify(result));
