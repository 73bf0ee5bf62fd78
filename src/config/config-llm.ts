// The LLM gateway's configuration (src/llm-gateway/, docs/llm-gateway.md): agents reach their
// LLM through the service, which swaps a conversation's gateway token for its owner's key.
import path from 'node:path';
import { z } from 'zod';
import { byteSize, hostRules, optionalString, parseSize, rateLimit, splitList } from './config-values.js';

export const llmGatewayEnv = {
  // "on": every conversation's LLM goes through the gateway (the key stays in the service); "off":
  // the key goes into the sandbox as before, for every user (an operator's explicit choice).
  LLM_GATEWAY: z.enum(['on', 'off']).default('on'),
  // A model the gateway cannot front (AWS Bedrock, Vertex AI, Gemini): "per-user" runs it with the
  // owner's key in the sandbox when the owner chose so (settings llm_key_in_sandbox); "never" refuses it.
  LLM_KEY_IN_SANDBOX: z.enum(['per-user', 'never']).default('per-user'),
  // Where users' LLM base URLs may point, as GIT_PROVIDER_HOSTS ("*": public addresses); host
  // loopback ports in SANDBOX_HOST_PORTS (a local LLM server) are allowed too.
  LLM_UPSTREAM_HOSTS: hostRules,
  // LiteLLM's price table (a file or an http(s) URL; default: the one the agent server's venv ships).
  LLM_PRICES: optionalString,
  // The operator's own prices, same format, winning over LiteLLM's; a "*" entry prices every other model.
  LLM_OPERATOR_PRICES: optionalString,
  LLM_PRICES_REFRESH_MINUTES: z.coerce.number().int().min(0).max(10_080).default(360),
  // Models the gateway serves, as globs over the model the agent names ("anthropic/*,openai/gpt-4o"); empty: all.
  LLM_ALLOWED_MODELS: optionalString,
  LLM_RATE_LIMIT_PER_USER: rateLimit(600),
  LLM_MAX_REQUEST_SIZE: byteSize('32mb'),
  LLM_MAX_ANSWER_SIZE: byteSize('64mb'),
  // A call's whole time, a stream included (the agent SDK gives up after 300 s an attempt).
  LLM_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(600_000),
};

type LlmGatewayEnv = z.output<z.ZodObject<typeof llmGatewayEnv>>;

export function llmGatewayConfig(e: LlmGatewayEnv) {
  return {
    llmGateway: {
      enabled: e.LLM_GATEWAY === 'on',
      keyInSandboxByChoice: e.LLM_KEY_IN_SANDBOX === 'per-user',
      upstreamHosts: splitList(e.LLM_UPSTREAM_HOSTS).map((h) => h.toLowerCase()),
      prices: e.LLM_PRICES ? (/^https?:/i.test(e.LLM_PRICES) ? e.LLM_PRICES : path.resolve(e.LLM_PRICES)) : null,
      operatorPrices: e.LLM_OPERATOR_PRICES ? path.resolve(e.LLM_OPERATOR_PRICES) : null,
      pricesRefreshMs: e.LLM_PRICES_REFRESH_MINUTES * 60_000,
      allowedModels: splitList(e.LLM_ALLOWED_MODELS),
      ratePerUser: e.LLM_RATE_LIMIT_PER_USER,
      maxRequestBytes: parseSize(e.LLM_MAX_REQUEST_SIZE),
      maxAnswerBytes: parseSize(e.LLM_MAX_ANSWER_SIZE),
      timeoutMs: e.LLM_TIMEOUT_MS,
    },
  };
}
