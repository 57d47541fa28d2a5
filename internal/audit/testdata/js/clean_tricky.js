/*
 * Do not write `new OpenAI()` here: the gateway retries.
 * const client = new OpenAI({ maxRetries: 2 });
 */
import OpenAI from "openai";

// const old = new OpenAI();
const help = "new OpenAI() with maxRetries: 0";
const single = 'new OpenAI({ maxRetries: 3 })';
const tmpl = `
  const c = new OpenAI();
  ${help.length > 3 ? `nested ${"new OpenAI()"} ${`deeper ${'new OpenAI()'}`}` : "none"}
`;
const re = /new OpenAI\(\)/g;
const re2 = /[/]new OpenAI\(/;
const ratio = tmpl.length / 2 / re.lastIndex;
const escaped = "say \"new OpenAI()\" twice";

function factory(opts) {
  return new OpenAI(opts);
}

export function fromEnv(config) {
  return new OpenAI({ ...config.llm });
}

class NotTheClient {
  OpenAI() {
    return new Map();
  }
}

export { factory, ratio, re2, single, escaped, NotTheClient };
export const ok = new OpenAI({ maxRetries: 0, timeout: 30_000 });
export const direct = new OpenAI(); /* sluice:ignore: a probe that bypasses the gateway */
