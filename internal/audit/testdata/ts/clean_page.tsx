import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0, timeout: 60_000, dangerouslyAllowBrowser: true });

export function Help(): JSX.Element {
  return (
    <div className="help">
      <p>Don't write new OpenAI() without maxRetries: 0.</p>
      <code>{"new OpenAI({ maxRetries: 2 })"}</code>
      <a href="/docs/clients">Read the docs</a>
    </div>
  );
}

export default client;
