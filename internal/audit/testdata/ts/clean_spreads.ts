// Options the audit cannot pin down statically: conditional spreads that
// may set what is asked for, spreads of unknown objects, and timeouts
// given as expressions in milliseconds. None of these is a finding.
import OpenAI, { type ClientOptions } from "openai";
import { AnthropicBedrock } from "@anthropic-ai/bedrock-sdk";
import AnthropicVertex from "@anthropic-ai/vertex-sdk";

declare const behindGateway: boolean;
declare const opts: ClientOptions;
const TIMEOUT_MS = Number(process.env.OPENAI_TIMEOUT_MS ?? 60_000);

export const a = new OpenAI({ ...(behindGateway ? { maxRetries: 0 } : {}), timeout: 60 * 1000 });
export const b = new OpenAI({ ...opts, maxRetries: 0 });
export const c = new OpenAI({ maxRetries: 0, timeout: TIMEOUT_MS });
export const d = new OpenAI({
  ...(behindGateway && { maxRetries: 0, timeout: 35 * 1000 }),
});
export const e = new OpenAI({ ...(behindGateway ? { maxRetries: 0, timeout: 35_000 } : opts) });
export const f = new OpenAI({ timeout: behindGateway ? 35_000 : undefined, ...(opts ?? {}), maxRetries: 0 });
export const g = new OpenAI({ maxRetries: 0, ...(behindGateway ? { maxRetries: 3 } : null), timeout: 5 * 60 * 1000 });

// Bedrock and Vertex go through the gateway's bedrock and vertex routes,
// with the SDK's retries at 0 like any Anthropic client.
export const bedrock = new AnthropicBedrock({ awsRegion: "us-east-1", maxRetries: 0, timeout: 60_000 });
export const vertex = new AnthropicVertex({ region: "us-east5", maxRetries: 0, timeout: 2 * 60 * 1000 });
