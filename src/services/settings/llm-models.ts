// The LLM model ids GET /api/options/models offers (the web UI splits each into provider and
// model at the first "/"). A maintained selection of current models from the providers the
// agent SDK (LiteLLM) reaches, not LiteLLM's whole catalogue; operators add their own with
// LLM_MODELS (local or proxied models, e.g. "ollama/qwen2.5-coder" or "litellm_proxy/my-model").
// Keep it sorted by provider; the service de-duplicates and sorts the final list.
export const LLM_MODELS: readonly string[] = [
  'anthropic/claude-3-5-haiku-20241022',
  'anthropic/claude-3-7-sonnet-20250219',
  'anthropic/claude-opus-4-1-20250805',
  'anthropic/claude-opus-4-20250514',
  'anthropic/claude-sonnet-4-20250514',
  'anthropic/claude-sonnet-4-5-20250929',
  'deepseek/deepseek-chat',
  'deepseek/deepseek-reasoner',
  'gemini/gemini-2.5-flash',
  'gemini/gemini-2.5-pro',
  'mistral/devstral-medium-2507',
  'mistral/devstral-small-2507',
  'mistral/mistral-large-latest',
  'openai/gpt-4.1',
  'openai/gpt-4.1-mini',
  'openai/gpt-4o',
  'openai/gpt-4o-mini',
  'openai/gpt-5-2025-08-07',
  'openai/gpt-5-mini-2025-08-07',
  'openai/o3',
  'openai/o4-mini',
  // The OpenHands-hosted models the web UI lists as verified (its default is the first).
  'openhands/claude-sonnet-4-20250514',
  'openhands/claude-sonnet-4-5-20250929',
  'openhands/claude-opus-4-20250514',
  'openhands/devstral-medium-2507',
  'openhands/devstral-small-2505',
  'openhands/devstral-small-2507',
  'openhands/gemini-2.5-pro',
  'openhands/gpt-5-2025-08-07',
  'openhands/gpt-5-mini-2025-08-07',
  'openhands/kimi-k2-0711-preview',
  'openhands/o3',
  'openhands/o4-mini',
  'openhands/qwen3-coder-480b',
  'xai/grok-4',
];
