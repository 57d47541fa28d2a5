import Anthropic from "@anthropic-ai/sdk";
import OpenAI, { type ClientOptions } from "openai";

const base = {
  maxRetries: 0,
  timeout: 30_000,
} as const satisfies ClientOptions;

export const gpt = new OpenAI({ ...base, apiKey: process.env.OPENAI_API_KEY! });
export const claude = new Anthropic({
  apiKey: process.env.ANTHROPIC_API_KEY,
  baseURL: "http://127.0.0.1:8080/anthropic",
  defaultHeaders: { "Sluice-Policy": "nightly" },
  maxRetries: 0,
  timeout: 600_000,
});

export function build(options: ClientOptions): OpenAI {
  return new OpenAI(options);
}

export function tuned(extra: Partial<ClientOptions>): OpenAI {
  return new OpenAI({ maxRetries: 0, timeout: 5_000, ...extra });
}

const generic = new Map<string, OpenAI>();
const ratio = generic.size / 2;
const pattern = /new OpenAI\(\{\s*\}\)/;
export { generic, ratio, pattern };
