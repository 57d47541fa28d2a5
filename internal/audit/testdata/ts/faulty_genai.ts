// Google GenAI clients that can hang a worker.
import { GoogleGenAI } from "@google/genai";
import * as genai from "npm:@google/genai@1";

export const plain = new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY }); // want: timeout

export const baseOnly = new GoogleGenAI({ // want: timeout
  apiKey: "test",
  httpOptions: { baseUrl: "http://127.0.0.1:8080/gemini" },
});

const http = { baseUrl: "http://127.0.0.1:8080/gemini", timeout: undefined };
export const viaSpace = new genai.GoogleGenAI({ httpOptions: http }); // want: timeout

export const retrying = new GoogleGenAI({ // want: retries-on
  httpOptions: { baseUrl: "http://127.0.0.1:8080/gemini", timeout: 35_000, retryOptions: {} },
});

const retryOptions = { attempts: 3 };
export const threeTries = new genai.GoogleGenAI({ httpOptions: { timeout: 35_000, retryOptions } }); // want: retries-on
