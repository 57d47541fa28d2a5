// Conditional spreads that cannot hide what is missing: neither branch
// sets a timeout, or both set the same retries.
import OpenAI from "openai";

declare const local: boolean;
const common = { maxRetries: 0 };

export const a = new OpenAI({ ...(local ? { maxRetries: 0 } : {}) }); // want: timeout
export const b = new OpenAI({ ...(local && { maxRetries: 0 }), apiKey: "k" }); // want: timeout
export const c = new OpenAI({ ...(local ? { maxRetries: 3 } : { maxRetries: 3 }), timeout: 9_000 }); // want: retries-on short-timeout
export const d = new OpenAI({ ...(local ? common : { baseURL: "http://127.0.0.1:8080/openai/v1" }) }); // want: timeout
export const e = new OpenAI({ ...((local || undefined) && { baseURL: "http://x" }), timeout: 1000 }); // want: retries short-timeout
