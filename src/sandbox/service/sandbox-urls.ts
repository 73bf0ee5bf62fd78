// The URLs browsers use to reach sandboxes: the origins agent servers must allow (CORS), the
// VS Code URL with its connection token, and agent servers reached through the service.
import type { ExposedUrl, SandboxState } from '../runtime.js';
import { AGENT_SERVER } from '../sandbox-ports.js';

/** Where the service passes requests on to a sandbox's agent server (src/http/agent-server-proxy.ts). */
export const AGENT_PROXY_PREFIX = '/agent-servers/';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The base URL browsers reach agent servers through (this service), or null when they use each
 * sandbox's own address. `auto`: through the service when it is deployed on a hostname (PUBLIC_URL
 * off loopback) and the sandboxes have no browser-facing address of their own: process sandboxes
 * listen on the host's loopback, and pods without SANDBOX_DOMAIN on in-cluster addresses only.
 */
export function agentProxyBase(
  sandbox: { agentUrls: 'auto' | 'direct' | 'service'; runtime: string; kubernetes: { domain?: string | undefined } },
  publicUrl: string | undefined,
  listeningUrl: () => string,
): () => string | null {
  if (sandbox.agentUrls === 'direct') return () => null;
  if (sandbox.agentUrls === 'service') return () => publicUrl ?? listeningUrl();
  const onHostname = publicUrl !== undefined && !LOOPBACK.has(new URL(publicUrl).hostname);
  const ownAddress = sandbox.runtime === 'kubernetes' && Boolean(sandbox.kubernetes.domain);
  return onHostname && !ownAddress ? () => publicUrl : () => null;
}

/**
 * A sandbox's state as browsers see it when agent servers are reached through the service: the
 * AGENT_SERVER URL on the service's origin, the runtime's own address kept as the internal one
 * (which the service itself calls).
 */
export function reachedThrough(base: string | null, sandboxId: string, state: SandboxState): SandboxState {
  if (!base || state.status !== 'RUNNING' || !state.exposedUrls) return state;
  const own = state.exposedUrls.find((u) => u.name === AGENT_SERVER)?.url;
  return {
    ...state,
    internalUrl: state.internalUrl ?? own,
    exposedUrls: state.exposedUrls.map((u) => (u.name === AGENT_SERVER ? { ...u, url: `${base}${AGENT_PROXY_PREFIX}${sandboxId}` } : u)),
  };
}

/**
 * The origins a browser calls agent servers from: where the web UI is served (the service's
 * public URL) and TRUSTED_ORIGINS. Once the list is set, agent servers stop allowing localhost
 * implicitly (the reference's agent server), so a service on localhost names both spellings.
 */
export function browserOrigins(publicUrl: string, trusted: string[]): string[] {
  const url = new URL(publicUrl);
  const origins = [url.origin, ...trusted];
  if (url.hostname === 'localhost' || url.hostname === '127.0.0.1') {
    for (const host of ['localhost', '127.0.0.1']) origins.push(`${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`);
  }
  return [...new Set(origins)];
}

/**
 * The VSCODE URL as browsers open it: with the openvscode connection token (the agent server
 * uses the sandbox's session key) and the folder to open, as the reference builds it.
 */
export function withVscodeToken(urls: ExposedUrl[] | null, sessionKey: string, workingDir: string): ExposedUrl[] | null {
  if (!urls) return urls;
  const query = `?tkn=${encodeURIComponent(sessionKey)}&folder=${encodeURIComponent(workingDir).replace(/%2F/g, '/')}`;
  return urls.map((u) => (u.name === 'VSCODE' ? { ...u, url: `${u.url.replace(/\/+$/, '')}/${query}` } : u));
}
