"use strict";
const OpenAI = require("openai");
const { AzureOpenAI } = require("openai");
const Claude = require("@anthropic-ai/sdk").default;
const { default: Bedrock } = require("@anthropic-ai/bedrock-sdk");

const base = { timeout: 15000 };

module.exports = {
  openai: new OpenAI({ ...base }), // want: retries short-timeout
  nested: new OpenAI.AzureOpenAI({ maxRetries: 0 }), // want: timeout
  azure: new AzureOpenAI({ endpoint: process.env.AZURE_ENDPOINT, apiVersion: "2024-06-01" }), // want: retries timeout
  claude: new Claude({ maxRetries: 0, ...base, maxRetries: 4 }), // want: retries-on short-timeout
  bedrock: new Bedrock({ awsRegion: "us-east-1", maxRetries: 0 }), // want: timeout
};
