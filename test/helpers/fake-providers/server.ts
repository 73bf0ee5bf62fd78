// The HTTP side every git provider fake shares: bearer/basic token check, outage and delay
// switches, rate limiting, a request log (with the authorization each request carried) and the
// highest number of requests it ever had in flight at once.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeWorld, type FakeWorld } from './data.js';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: any;
  base: string;
}

export type FakeAnswer = { status?: number; json?: unknown; text?: string; headers?: Record<string, string> } | null;

export interface FakeProvider {
  url: string;
  world: FakeWorld;
  validTokens: Set<string>;
  /** When set, every request answers this status. */
  failWith: number | null;
  /** When set, every authenticated request gets exactly this answer (malformed bodies). */
  answerWith: { status: number; text: string } | null;
  /** Answer 429 (or GitHub's 403 with remaining 0) with Retry-After: 30. */
  rateLimited: boolean;
  delayMs: number;
  requests: { method: string; path: string; search: string; authorization: string | undefined }[];
  maxInFlight: number;
  inFlight: number;
  close(): Promise<void>;
}

export async function startFakeServer(
  route: (req: FakeRequest, world: FakeWorld) => FakeAnswer,
  options: { rateLimitStatus?: number } = {},
): Promise<FakeProvider> {
  const sockets = new Set<import('node:net').Socket>();
  const fake = {
    world: makeWorld(),
    validTokens: new Set<string>(),
    failWith: null as number | null,
    answerWith: null as { status: number; text: string } | null,
    rateLimited: false,
    delayMs: 0,
    requests: [] as FakeProvider['requests'],
    maxInFlight: 0,
    inFlight: 0,
  };
  let base = '';
  const server = http.createServer(async (req, res) => {
    // In flight = connections the client holds open (an abandoned request no longer counts).
    fake.inFlight++;
    fake.maxInFlight = Math.max(fake.maxInFlight, fake.inFlight);
    res.once('close', () => fake.inFlight--);
    {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const url = new URL(req.url ?? '/', base);
      fake.requests.push({ method: req.method ?? 'GET', path: url.pathname, search: url.search, authorization: req.headers.authorization });
      if (fake.delayMs) await new Promise((r) => setTimeout(r, fake.delayMs));
      if (res.destroyed) return;
      const send = (status: number, body: string, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
      if (fake.failWith) return send(fake.failWith, '{"message":"upstream trouble with token ' + (req.headers.authorization ?? '') + '"}');
      if (fake.rateLimited) {
        const status = options.rateLimitStatus ?? 429;
        return send(status, '{"message":"API rate limit exceeded"}', { 'retry-after': '30', 'x-ratelimit-remaining': '0' });
      }
      if (!fake.validTokens.has(tokenOf(req.headers.authorization))) return send(401, '{"message":"Bad credentials"}');
      if (fake.answerWith) return send(fake.answerWith.status, fake.answerWith.text);
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
      const answer = route({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, body, base }, fake.world);
      if (!answer) return send(404, '{"message":"Not Found"}');
      if (answer.text !== undefined) {
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers }).end(answer.text);
      } else send(answer.status ?? 200, JSON.stringify(answer.json), answer.headers);
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(fake, {
    url: base,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
}

function tokenOf(authorization: string | undefined): string {
  if (authorization?.startsWith('Bearer ')) return authorization.slice(7);
  if (authorization?.startsWith('Basic ')) return Buffer.from(authorization.slice(6), 'base64').toString();
  return '';
}

/** A Link header for page `page` of `last` at `url` (GitHub and GitLab style). */
export function linkHeader(url: URL, page: number, last: number, withFirstLast: boolean): string {
  const at = (n: number) => {
    const u = new URL(url);
    u.searchParams.set('page', String(n));
    return u.toString();
  };
  const parts = page < last ? [`<${at(page + 1)}>; rel="next"`] : [];
  if (withFirstLast) parts.push(`<${at(1)}>; rel="first"`, `<${at(last)}>; rel="last"`);
  return parts.join(', ');
}
