import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const MAX_RETRIES = 0;
const TIMEOUT_MS = 30_000;

export const openai = new OpenAI({
  apiKey: process.env.OPENAI_API_KEY,
  baseURL: process.env.OPENAI_BASE_URL,
  defaultHeaders: { "Sluice-Policy": "interactive" },
  maxRetries: 0,
  timeout: 30 * 1000,
});

const shared = { maxRetries: MAX_RETRIES, timeout: TIMEOUT_MS };
export const claude = new Anthropic({ ...shared, apiKey: process.env.ANTHROPIC_API_KEY });

const options = {
  maxRetries: 0,
  timeout: 60_000,
};
export const fromName = new Anthropic(options);

export const chained = new OpenAI().withOptions({ maxRetries: 0, timeout: 60_000 });
export const shorter = openai.withOptions({ timeout: 5000 });
export const quoted = new OpenAI({ "maxRetries": 0, 'timeout': 40_000 });
const maxRetries = 0;
const timeout = 45_000;
export const shorthand = new OpenAI({ maxRetries, timeout });
