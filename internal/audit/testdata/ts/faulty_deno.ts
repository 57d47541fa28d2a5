import OpenAI from "npm:openai@4.77.0";
import { Anthropic } from "jsr:@anthropic-ai/sdk";

const gpt = new OpenAI({ timeout: 10_000 }); // want: retries short-timeout
const claude = new Anthropic({ maxRetries: 0 }); // want: timeout

Deno.serve(async (req) => {
  const { OpenAI: Lazy } = await import("openai");
  const lazy = new Lazy({ maxRetries: 1, timeout: 5_000 }); // want: retries-on short-timeout
  return new Response(JSON.stringify({ gpt: !!gpt, claude: !!claude, lazy: !!lazy }));
});
