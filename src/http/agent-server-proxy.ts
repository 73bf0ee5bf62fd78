// Agent servers on the service's origin (docs/sandboxes.md, Reaching agent servers): requests to
// /agent-servers/<sandbox id>/<path>, HTTP and WebSocket alike, go on to that sandbox's agent
// server at <path>, for browsers that cannot reach a sandbox's own address (a process sandbox
// listens on the host's loopback; a pod without SANDBOX_DOMAIN on in-cluster addresses only).
// Agent Canvas keeps a conversation URL's path before /api/conversations, so it calls and opens
// its sockets here unchanged.
//
// The caller holds the sandbox's session key, as the agent server itself asks for it
// (X-Session-API-Key, or session_api_key in a socket's query); it is checked here first, so a
// request without it never reaches a sandbox. The service's own credentials (its session cookie,
// Authorization) never go on, and a sandbox's answer cannot act on this origin: no cookie it sets
// is passed back, and what it serves runs under a sandboxing Content-Security-Policy (a page of
// a hostile sandbox cannot read the service's API as the person who opened it).
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import { secretsEqual } from '../crypto.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { AGENT_PROXY_PREFIX, type SandboxesService } from '../sandbox/index.js';

const PATH = new RegExp(`^${AGENT_PROXY_PREFIX}([0-9a-f]{32})(/[^?]*)?(\\?.*)?$`);
/** Not passed on: the service's credentials, and hop-by-hop headers (RFC 9110 7.6.1). */
const DROPPED_REQUEST = new Set(['cookie', 'authorization', 'host', 'connection', 'keep-alive', 'proxy-authorization', 'te', 'trailer']);
const DROPPED_ANSWER = new Set(['set-cookie', 'connection', 'keep-alive', 'transfer-encoding', 'trailer']);
const ANSWER_GUARDS = { 'content-security-policy': 'sandbox', 'x-content-type-options': 'nosniff' };
/** How long a socket without a key in its request has to send it as its first message. */
const FIRST_MESSAGE_MS = 10_000;
const MAX_FIRST_MESSAGE = 4096;

type Sandboxes = Pick<SandboxesService, 'credentials' | 'agentOf'>;
type Target = { url: URL; path: string };
type Refusal = { status: 401 | 404 | 429 | 503; detail: string };

/**
 * `chargeRefused`: a refused request's address pays the per-IP limit (as any request whose
 * credentials proved nothing); it throws once the address is over it.
 */
export function agentServerProxy(sandboxes: Sandboxes, log: Logger, chargeRefused: (req: IncomingMessage) => void = () => {}) {
  const agent = new http.Agent({ keepAlive: true });
  const sockets = new Set<Duplex>();

  /** A request's sandbox, the key it presents (header, else the query's session_api_key) and the path it asks for there. */
  function parse(url: string, headers: IncomingHttpHeaders) {
    const [, sandboxId, rest = '/', query = ''] = PATH.exec(url)!;
    const presented = headers['x-session-api-key'] ?? new URLSearchParams(query).get('session_api_key');
    return { sandboxId: sandboxId!, rest: `${rest}${query}`, presented: typeof presented === 'string' ? presented : null };
  }

  /** The sandbox's session key; null for a sandbox nobody may reach (unknown, or an unclaimed warm one). */
  const keyOf = async (sandboxId: string) => (await sandboxes.credentials(sandboxId))?.sessionKey ?? null;

  /** Where the running agent server of the sandbox listens, or why not. */
  async function locate(sandboxId: string, rest: string): Promise<Target | Refusal> {
    const running = await sandboxes.agentOf(sandboxId);
    if (!running) return { status: 503, detail: 'The sandbox is not running' };
    const base = new URL(running.url);
    return { url: base, path: `${base.pathname.replace(/\/$/, '')}${rest}` };
  }

  // An unknown sandbox and a wrong key read alike: ids are not for guessing.
  const WRONG_KEY: Refusal = { status: 401, detail: 'The sandbox session key is missing or wrong' };

  function passedHeaders(headers: IncomingHttpHeaders, host: string): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) if (value !== undefined && !DROPPED_REQUEST.has(name)) out[name] = value;
    out.host = host;
    return out;
  }

  const refuse = (res: ServerResponse, refusal: Refusal) => {
    const text = JSON.stringify({ detail: refusal.detail });
    if (refusal.status === 503) res.setHeader('retry-after', '5');
    res.writeHead(refusal.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { sandboxId, rest, presented } = parse(req.url!, req.headers);
    const key = await keyOf(sandboxId);
    if (!key || presented === null || !secretsEqual(presented, key)) {
      try {
        chargeRefused(req);
      } catch (error) {
        if (!(error instanceof AppError && error.reason === 'rate_limited')) throw error;
        res.setHeader('retry-after', String(error.retryAfterSeconds ?? 1));
        return refuse(res, { status: 429, detail: 'Too many requests' });
      }
      return refuse(res, WRONG_KEY);
    }
    const target = await locate(sandboxId, rest);
    if ('status' in target) return refuse(res, target);
    const upstream = http.request({
      host: target.url.hostname,
      port: target.url.port,
      method: req.method,
      path: target.path,
      headers: passedHeaders(req.headers, target.url.host),
      agent,
    });
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.once('error', (error) => {
      log.warn({ err: error }, 'agent server unreachable through the service');
      if (!res.headersSent) refuse(res, { status: 503, detail: 'The agent server could not be reached' });
      else res.destroy();
    });
    upstream.once('response', (answer) => {
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers))
        if (value !== undefined && !DROPPED_ANSWER.has(name)) headers[name] = value;
      res.writeHead(answer.statusCode ?? 502, { ...headers, ...ANSWER_GUARDS });
      answer.pipe(res);
      answer.once('error', () => res.destroy());
    });
    req.pipe(upstream);
  }

  /**
   * A WebSocket's upgrade, joined byte for byte once its key is known good: from the query or a
   * header as for calls, or else from the socket's first message, `{"type": "auth",
   * "session_api_key": …}` (how Agent Canvas authenticates its sockets): until that message
   * checks out, nothing of the agent server's but its handshake reaches the client.
   */
  async function join(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const unauthorised = () => void client.end(`HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    const { sandboxId, rest, presented } = parse(req.url!, req.headers);
    const key = await keyOf(sandboxId);
    if (!key || (presented !== null && !secretsEqual(presented, key))) return unauthorised();
    const target = await locate(sandboxId, rest);
    if ('status' in target) {
      client.end(`HTTP/1.1 ${target.status} ${http.STATUS_CODES[target.status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const upstream = net.connect(Number(target.url.port), target.url.hostname);
    sockets.add(client);
    const end = () => {
      sockets.delete(client);
      clearTimeout(deadline);
      upstream.destroy();
      client.destroy();
    };
    let authorised = presented !== null;
    const deadline = setTimeout(() => authorised || end(), FIRST_MESSAGE_MS);
    let fromClient: Buffer = head; // held until the first message is read
    let handshake: Buffer | null = Buffer.alloc(0); // the agent server's answer until its head is whole
    let held: Buffer | null = authorised ? null : Buffer.alloc(0); // what it sends after that, until the key checks out
    const open = () => {
      authorised = true;
      clearTimeout(deadline);
      upstream.write(fromClient);
      client.removeAllListeners('data');
      client.pipe(upstream);
      if (held?.length) client.write(held);
      held = null;
    };
    upstream.once('connect', () => {
      const headers = { ...passedHeaders(req.headers, target.url.host), connection: 'Upgrade' };
      const lines = Object.entries(headers).flatMap(([name, value]) =>
        (Array.isArray(value) ? value : [value]).map((v) => `${name}: ${v}`),
      );
      upstream.write(`${req.method} ${target.path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      if (authorised) open();
      else
        client.on('data', (chunk: Buffer) => {
          fromClient = Buffer.concat([fromClient, chunk]);
          const first = firstMessage(fromClient);
          if (first === 'incomplete') return;
          if (first !== 'bad' && secretsEqual(authKeyOf(first) ?? '', key)) open();
          else end();
        });
    });
    upstream.on('data', (chunk: Buffer) => {
      let rest = chunk;
      if (handshake) {
        handshake = Buffer.concat([handshake, chunk]);
        const headEnd = handshake.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        client.write(handshake.subarray(0, headEnd + 4));
        rest = handshake.subarray(headEnd + 4);
        handshake = null;
      }
      if (held) held = Buffer.concat([held, rest]);
      else if (rest.length) client.write(rest);
    });
    upstream.once('error', (error) => {
      log.warn({ err: error }, 'agent server socket unreachable through the service');
      end();
    });
    upstream.once('close', end);
    client.once('error', end);
    client.once('close', end);
  }

  return {
    /** Serves /agent-servers/…; false for any other path. */
    http(req: IncomingMessage, res: ServerResponse, path: string): boolean {
      if (!path.startsWith(AGENT_PROXY_PREFIX)) return false;
      if (!PATH.test(req.url!)) {
        refuse(res, { status: 404, detail: 'Not Found' });
        return true;
      }
      forward(req, res).catch((error: unknown) => {
        log.error({ err: error }, 'agent server proxy failed');
        if (!res.headersSent) refuse(res, { status: 503, detail: 'The agent server could not be reached' });
        else res.destroy();
      });
      return true;
    },
    /** The server's 'upgrade' listener: sockets to agent servers; any other upgrade is refused. */
    upgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
      client.on('error', () => undefined);
      if (!PATH.test(req.url ?? '')) {
        client.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      join(req, client, head).catch((error: unknown) => {
        log.error({ err: error }, 'agent server socket failed');
        client.destroy();
      });
    },
    /** Ends every joined socket (the service's stop: server.close leaves upgraded sockets open). */
    close(): void {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      agent.destroy();
    },
  };
}

/**
 * A client's first WebSocket frame (masked, RFC 6455 5.2), as text: an auth message is one small
 * text frame, compressed when the two ends agreed on permessage-deflate (RSV1, RFC 7692; the
 * first message of a socket needs no earlier context to inflate).
 */
function firstMessage(bytes: Buffer): string | 'incomplete' | 'bad' {
  if (bytes.length < 2) return 'incomplete';
  const final = (bytes[0]! & 0x80) !== 0;
  const compressed = (bytes[0]! & 0x40) !== 0;
  const text = (bytes[0]! & 0x0f) === 1;
  const masked = (bytes[1]! & 0x80) !== 0;
  let length = bytes[1]! & 0x7f;
  let offset = 2;
  if (!final || !text || !masked || length === 127) return 'bad';
  if (length === 126) {
    if (bytes.length < 4) return 'incomplete';
    length = bytes.readUInt16BE(2);
    offset = 4;
  }
  if (length > MAX_FIRST_MESSAGE) return 'bad';
  if (bytes.length < offset + 4 + length) return 'incomplete';
  const mask = bytes.subarray(offset, offset + 4);
  const payload = Buffer.from(bytes.subarray(offset + 4, offset + 4 + length));
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  if (!compressed) return payload.toString('utf8');
  try {
    const tail = Buffer.from([0x00, 0x00, 0xff, 0xff]);
    // The message ends at a sync flush, not at the stream's end.
    const options = { maxOutputLength: MAX_FIRST_MESSAGE, finishFlush: zlib.constants.Z_SYNC_FLUSH };
    return zlib.inflateRawSync(Buffer.concat([payload, tail]), options).toString('utf8');
  } catch {
    return 'bad';
  }
}

/** The key of an agent server's auth message, `{"type": "auth", "session_api_key": …}`; null for anything else. */
function authKeyOf(message: string): string | null {
  try {
    const parsed = JSON.parse(message) as { type?: unknown; session_api_key?: unknown };
    return parsed.type === 'auth' && typeof parsed.session_api_key === 'string' ? parsed.session_api_key : null;
  } catch {
    return null;
  }
}
