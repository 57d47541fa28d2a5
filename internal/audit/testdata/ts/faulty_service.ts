import Anthropic from "@anthropic-ai/sdk";
import { AzureOpenAI, OpenAI as OAI } from "openai";
import * as oai from "openai";
import type { ClientOptions } from "openai";

export class LlmService {
  private readonly claude: Anthropic;
  private readonly gpt: OAI;

  constructor(private readonly apiKey: string) {
    this.claude = new Anthropic({ apiKey, timeout: 60_000 }); // want: retries
    this.gpt = new OAI({ // want: retries-on
      apiKey,
      maxRetries: 4 as number,
      timeout: 30_000,
    });
  }
}

const opts: ClientOptions = { timeout: 20_000 };
export const fromOpts = new oai.OpenAI(opts); // want: retries short-timeout
export const viaDefault = new oai.default({ maxRetries: 0 }); // want: timeout
export const azure = new AzureOpenAI({ // want: retries timeout
  apiVersion: "2024-10-21",
  deployment: "gpt-4o",
});
export const bare = new OAI; // want: retries timeout

const shared = { timeout: 8_000 };
export const fromShared = new OAI(shared); // want: retries short-timeout
export const wrap = (shared: ClientOptions) => new OAI(shared);
export function wrapped(shared: ClientOptions): OAI {
  return new OAI({ ...shared });
}
export function perTenant(): OAI[] {
  const shared = { maxRetries: 0, timeout: 1_000 };
  return [new OAI(shared)];  // want: short-timeout
}
export class Pool {
  make(shared?: ClientOptions): OAI {
    return new OAI(shared);
  }
  fallback(): OAI {
    return new OAI(shared); // want: retries short-timeout
  }
}
