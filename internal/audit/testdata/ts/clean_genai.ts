// Google GenAI clients with a timeout, and near-misses that are not clients.
import { GoogleGenAI, Type } from "@google/genai";
import Default from "@google/genai";
import { GoogleGenerativeAI } from "@google/generative-ai";

const GATEWAY = "http://127.0.0.1:8080/gemini";

export const client = new GoogleGenAI({
  apiKey: process.env.GEMINI_API_KEY,
  httpOptions: { baseUrl: GATEWAY, timeout: 35_000 },
});

const httpOptions = { baseUrl: GATEWAY, timeout: 35_000 };
export const shorthand = new GoogleGenAI({ httpOptions });

export const oneAttempt = new GoogleGenAI({ httpOptions: { timeout: 35_000, retryOptions: { attempts: 1 } } });
export const noRetries = new GoogleGenAI({ httpOptions: { timeout: 35_000, retryOptions: undefined } });

export function fromCaller(opts: object) {
  return new GoogleGenAI({ httpOptions: opts as never });
}

// The package has no default client export, and other Google packages are not read.
export const notAClient = new Default();
export const legacy = new GoogleGenerativeAI("key");
export const schema = { type: Type.OBJECT };
