// The URLs browsers use to reach sandboxes: the origins agent servers must allow (CORS) and the
// VS Code URL with its connection token.
import type { ExposedUrl } from '../runtime.js';

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
