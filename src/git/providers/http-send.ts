// One HTTP exchange on node:http(s), for the provider client: node's own request rather than
// fetch, because the connection's address lookup must be ours (provider-hosts.ts checks every
// resolved address) and redirects must never be followed (node's client has no such feature).
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { AddressRefusedError } from './provider-hosts.js';

export interface SendInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  agent: http.Agent;
  signal: AbortSignal;
}

export interface Answer {
  status: number;
  header(name: string): string | null;
  body: IncomingMessage;
}

export function send(url: URL, init: SendInit): Promise<Answer> {
  const request = url.protocol === 'https:' ? https.request : http.request;
  const headers = init.body === undefined ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  return new Promise<Answer>((resolve, reject) => {
    const req = request(url, { method: init.method, headers, agent: init.agent, signal: init.signal }, (res) => {
      resolve({
        status: res.statusCode ?? 0,
        header: (name) => {
          const value = res.headers[name];
          return Array.isArray(value) ? value.join(', ') : (value ?? null);
        },
        body: res,
      });
    });
    req.once('error', reject);
    req.end(init.body);
  });
}

/** The body as text, or tooLarge() once it passes maxBytes (the rest is not read). */
export async function readCapped(body: IncomingMessage, maxBytes: number, tooLarge: () => Error): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).byteLength;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * What a failed connection was, in our words only (never the far side's): `rules` names the
 * setting whose SSRF rules refused an address (GIT_PROVIDER_HOSTS' form).
 */
export function connectionFailure(error: unknown, rules: string): string {
  const code = (error as { code?: unknown }).code;
  if (error instanceof AddressRefusedError || code === 'EADDRREFUSED') return `The URL resolves to an address not allowed here (${rules})`;
  if (code === 'ECONNREFUSED') return 'Connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'The host name does not resolve';
  if (code === 'ECONNRESET') return 'The connection was reset';
  return typeof code === 'string' ? `Request failed (${code})` : 'Request failed';
}

/** Keep-alive agents for both schemes, resolving names with `lookup` (node's own when absent). */
export function agentsFor(lookup?: LookupFunction): { 'http:': http.Agent; 'https:': https.Agent } {
  const options = { keepAlive: true, ...(lookup ? { lookup } : {}) };
  return { 'http:': new http.Agent(options), 'https:': new https.Agent(options) };
}
