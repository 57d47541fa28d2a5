// Webhook worker: answers support tickets.
import OpenAI from "openai";

const client = new OpenAI(); // want: retries timeout

const retrying = new OpenAI({ apiKey: process.env.OPENAI_API_KEY, maxRetries: 3 }); // want: retries-on timeout

const patient = new OpenAI({ // want: retries short-timeout
  baseURL: "http://127.0.0.1:8080/openai/v1",
  timeout: 20_000,
});

const undef = new OpenAI({ maxRetries: undefined, timeout: null }); // want: retries timeout

export async function answer(ticket) {
  const r = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: `Ticket ${ticket.id}: ${ticket.body}` }],
  });
  return r.choices[0].message.content;
}

export const slow = patient.withOptions({ maxRetries: 5 }); // want: retries-on
export const chained = new OpenAI({ maxRetries: 0 }).withOptions({ maxRetries: 2, timeout: 9000 }); // want: retries-on short-timeout
