// Where a gateway call goes and with what (docs/llm-gateway.md): the API style is read from the
// path the agent's LLM client calls (litellm appends /chat/completions, /responses or
// /v1/messages to the base URL it was given), the upstream is the route's own base URL (the
// owner's setting) or the provider's, and the owner's key replaces the gateway token in the
// provider's own header. Only the headers a provider reads are passed on.
import type { Config } from '../config/config.js';
import { ProviderHostPolicy } from '../git/providers/provider-hosts.js';

/** The three APIs the agent's LLM client speaks; the model info lookup litellm_proxy models make. */
export type ApiStyle = 'chat' | 'responses' | 'messages' | 'model-info';
export type Family = 'openai' | 'anthropic';

export const familyOf = (style: ApiStyle): Family => (style === 'messages' ? 'anthropic' : 'openai');

/**
 * The API style of a gateway path (after the /llm prefix), whatever base the client was given:
 * litellm calls <base>/v1/messages even when the base ends in /v1, hence the repeated /v1.
 */
export function apiStyleOf(method: string, path: string): ApiStyle | null {
  const p = path.replace(/\/+$/, '');
  if (method === 'POST') {
    if (/^(\/v1)?\/chat\/completions$/.test(p)) return 'chat';
    if (/^(\/v1)?\/responses$/.test(p)) return 'responses';
    if (/^(\/v1){1,2}\/messages$/.test(p)) return 'messages';
  }
  if (method === 'GET' && /^(\/v1){1,2}\/model\/info$/.test(p)) return 'model-info';
  return null;
}

const PROVIDER_ROOTS: Record<Family, string> = { openai: 'https://api.openai.com/v1', anthropic: 'https://api.anthropic.com' };

/** The providers' own API roots: trusted as configured (the host rules apply to users' base URLs). */
export const PROVIDER_API_ROOTS = Object.values(PROVIDER_ROOTS);

/** The upstream URL of a call, as litellm would have built it from the owner's base URL. */
export function upstreamUrl(style: Exclude<ApiStyle, 'model-info'>, baseUrl: string | null): string {
  const base = (baseUrl ?? PROVIDER_ROOTS[familyOf(style)]).replace(/\/+$/, '');
  if (style === 'messages') return /\/v1\/messages$/.test(base) ? base : `${base}/v1/messages`;
  return `${base}/${style === 'chat' ? 'chat/completions' : 'responses'}`;
}

/** Request headers a provider reads, passed on as the client sent them (never its credentials). */
const PASSED_REQUEST_HEADERS = ['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'openai-beta', 'user-agent'];

export function upstreamHeaders(
  style: ApiStyle,
  incoming: Record<string, string | string[] | undefined>,
  key: string | null,
  bodyBytes: number,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_REQUEST_HEADERS) {
    const value = incoming[name];
    if (typeof value === 'string') headers[name] = value;
  }
  headers['content-type'] ??= 'application/json';
  headers['content-length'] = String(bodyBytes);
  if (key) {
    if (familyOf(style) === 'anthropic') headers['x-api-key'] = key;
    else headers.authorization = `Bearer ${key}`;
  }
  if (style === 'messages') headers['anthropic-version'] ??= '2023-06-01';
  return headers;
}

/** Answer headers passed back: the body's type, the retry hints and the providers' rate-limit and request ids. */
export function passedAnswerHeader(name: string): boolean {
  return (
    name === 'content-type' ||
    name === 'retry-after' ||
    name === 'retry-after-ms' ||
    name === 'request-id' ||
    name === 'x-request-id' ||
    name.startsWith('x-ratelimit-') ||
    name.startsWith('anthropic-ratelimit-') ||
    name.startsWith('openai-')
  );
}

/** The token a gateway call presents, where the provider's client puts its key. */
export function presentedToken(incoming: Record<string, string | string[] | undefined>): string | undefined {
  const apiKey = incoming['x-api-key'];
  if (typeof apiKey === 'string' && apiKey) return apiKey;
  const auth = incoming.authorization;
  return typeof auth === 'string' && /^bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
}

/** The model as the provider is asked for it: litellm strips its routing prefix before it sends. */
export function providerModel(model: string): string {
  return model.replace(/^(openai|anthropic|litellm_proxy)\//, '');
}

/** Whether the gateway can front the model's provider (no request signing such as AWS SigV4). */
export function frontedModel(model: string): boolean {
  if (/^(openai|anthropic|litellm_proxy)\//.test(model)) return true;
  // Bare names litellm routes to OpenAI or Anthropic itself.
  return !model.includes('/') && /^(gpt-|o\d|chatgpt-|codex-|claude-)/.test(model);
}

/**
 * Where owners' base URLs may point: LLM_UPSTREAM_HOSTS (as GIT_PROVIDER_HOSTS: "*" public
 * addresses by default), the providers' roots, and the host loopback ports the operator lets
 * sandboxes reach (SANDBOX_HOST_PORTS: a local LLM server a sandbox could call directly).
 */
export function llmHostPolicy(config: Pick<Config, 'llmGateway' | 'sandbox'>): ProviderHostPolicy {
  const entries = config.llmGateway.upstreamHosts.length > 0 ? [...config.llmGateway.upstreamHosts] : ['*'];
  for (const port of config.sandbox.hostPorts) entries.push(`127.0.0.1:${port}`, `localhost:${port}`);
  return new ProviderHostPolicy(entries, PROVIDER_API_ROOTS);
}
