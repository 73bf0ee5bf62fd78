// Checks that an MCP server answers: initialize, tools/list (and one tools/call when asked), then
// close, over streamable HTTP or the older HTTP+SSE transport, as the agent server's own test
// does. The server is named by a user, so every connection goes through the SSRF guard of the
// git providers (MCP_TEST_HOSTS; git/providers/provider-hosts.ts), no redirect is followed, one
// time bound covers the whole exchange, and what a server says back is capped and has every
// credential of the test replaced by the mask before it is shown.
import type { IncomingMessage } from 'node:http';
import { SECRET_MASK } from '../../../contract/common.schema.js';
import { agentsFor, connectionFailure, readCapped, send } from '../../git/providers/http-send.js';
import type { ProviderHostPolicy } from '../../git/providers/provider-hosts.js';

export interface ProbeTarget {
  transport: 'sse' | 'http';
  url: string;
  headers: Record<string, string>;
}

export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export type ProbeResult =
  | { ok: true; tools: string[]; tool_result?: { is_error: boolean; text: string } }
  | { ok: false; error: string; error_kind: 'timeout' | 'connection' | 'unknown' };

const PROTOCOL_VERSION = '2025-06-18';
const MAX_BYTES = 1024 * 1024;
const MAX_TOOL_PAGES = 20;

class ProbeError extends Error {
  constructor(
    message: string,
    readonly kind: 'connection' | 'unknown',
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;
type Agents = ReturnType<typeof agentsFor>;

export class McpProbe {
  private readonly checked: Agents;
  private readonly listed: Agents;

  constructor(private readonly hosts: ProviderHostPolicy) {
    this.checked = agentsFor(hosts.lookup);
    this.listed = agentsFor();
  }

  async probe(target: ProbeTarget, timeoutMs: number, toolCall: ToolCall | null = null): Promise<ProbeResult> {
    const scrub = scrubberFor(Object.values(target.headers));
    const decision = this.hosts.decide(target.url, safeOrigin(target.url));
    if (!decision) return { ok: false, error: 'The URL is not allowed here (MCP_TEST_HOSTS)', error_kind: 'connection' };
    const agents = decision.reach === 'any' ? this.listed : this.checked;
    const signal = AbortSignal.timeout(timeoutMs);
    const session = target.transport === 'sse' ? new SseSession(target, agents, signal) : new HttpSession(target, agents, signal);
    try {
      await session.open();
      await session.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'agent-control-plane', version: '1' },
      });
      await session.notify('notifications/initialized');
      const tools: string[] = [];
      let cursor: unknown;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const listed = await session.request('tools/list', cursor ? { cursor } : {});
        for (const tool of Array.isArray(listed.tools) ? listed.tools : [])
          if (typeof tool?.name === 'string') tools.push(scrub(tool.name));
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
      if (!toolCall) return { ok: true, tools };
      const result = await session.request('tools/call', { name: toolCall.name, arguments: toolCall.arguments });
      const content = Array.isArray(result.content) ? (result.content as Json[]) : [];
      const text = content.flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n');
      return { ok: true, tools, tool_result: { is_error: result.isError === true, text: scrub(text) } };
    } catch (error) {
      if (signal.aborted) return { ok: false, error: `No answer within ${timeoutMs / 1000} s`, error_kind: 'timeout' };
      if (error instanceof ProbeError) return { ok: false, error: scrub(error.message).slice(0, 500), error_kind: error.kind };
      return { ok: false, error: connectionFailure(error, 'MCP_TEST_HOSTS'), error_kind: 'connection' };
    } finally {
      await session.close();
    }
  }
}

function scrubberFor(secrets: string[]): (text: string) => string {
  // Longest first, so a secret containing another is masked whole.
  const values = [...new Set(secrets.flatMap((v) => [v, v.replace(/^Bearer /, '')]))]
    .filter((v) => v.length >= 4)
    .sort((a, b) => b.length - a.length);
  return (text) => values.reduce((out, value) => out.split(value).join(SECRET_MASK), text);
}

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

/** JSON-RPC over one transport: requests wait for the answer with their id. */
abstract class Session {
  private nextId = 1;
  protected readonly waiting = new Map<number, (message: Json) => void>();

  constructor(
    protected readonly target: ProbeTarget,
    protected readonly agents: Agents,
    protected readonly signal: AbortSignal,
  ) {}

  abstract open(): Promise<void>;
  abstract close(): Promise<void>;
  protected abstract post(message: Json, expectsAnswer: boolean): Promise<Json | null>;

  async request(method: string, params: Json): Promise<Json> {
    const id = this.nextId++;
    const answer = await this.post({ jsonrpc: '2.0', id, method, params }, true);
    if (!answer) throw new ProbeError(`No answer to ${method}`, 'unknown');
    const error = answer.error as { message?: unknown; code?: unknown } | undefined;
    if (error)
      throw new ProbeError(
        `${method} failed: ${typeof error.message === 'string' ? error.message : `error ${String(error.code)}`}`,
        'unknown',
      );
    return (answer.result ?? {}) as Json;
  }

  async notify(method: string): Promise<void> {
    await this.post({ jsonrpc: '2.0', method }, false);
  }

  protected exchange(url: URL, method: string, headers: Record<string, string>, body?: string) {
    const agent = this.agents[url.protocol as 'http:' | 'https:'];
    if (!agent) throw new ProbeError('The URL must use http or https', 'connection');
    return send(url, { method, headers: { ...this.target.headers, ...headers }, body, agent, signal: this.signal });
  }

  /** Reads server-sent events until `until` says stop (or the stream ends), within the byte cap. */
  protected async readEvents(body: IncomingMessage, onEvent: (event: string, data: string) => boolean): Promise<void> {
    let buffer = '';
    let size = 0;
    for await (const chunk of body) {
      size += (chunk as Buffer).byteLength;
      if (size > MAX_BYTES) throw new ProbeError('The server sent more than 1 MB', 'unknown');
      buffer += (chunk as Buffer).toString('utf8');
      let end: RegExpExecArray | null;
      while ((end = /\r?\n\r?\n/.exec(buffer))) {
        const block = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length > 0 && onEvent(event, data.join('\n'))) return;
      }
    }
  }

  protected deliver(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
      const id = (message as Json)?.id;
      if (typeof id === 'number') this.waiting.get(id)?.(message as Json);
    }
  }
}

/** Streamable HTTP: each message a POST; an answer comes as JSON or as an event stream. */
class HttpSession extends Session {
  private sessionId: string | null = null;

  async open(): Promise<void> {}

  protected async post(message: Json, expectsAnswer: boolean): Promise<Json | null> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.sessionId) headers['mcp-session-id'] = this.sessionId;
    if (message.method !== 'initialize') headers['mcp-protocol-version'] = PROTOCOL_VERSION;
    const answer = await this.exchange(new URL(this.target.url), 'POST', headers, JSON.stringify(message));
    if (answer.status < 200 || answer.status >= 300) {
      answer.body.resume();
      throw new ProbeError(`The server answered HTTP ${answer.status}`, 'connection');
    }
    this.sessionId = answer.header('mcp-session-id') ?? this.sessionId;
    if (!expectsAnswer) {
      answer.body.resume();
      return null;
    }
    const id = message.id as number;
    if ((answer.header('content-type') ?? '').includes('text/event-stream')) {
      let found: Json | null = null;
      this.waiting.set(id, (m) => (found = m));
      await this.readEvents(answer.body, (_event, data) => (this.deliver(data), found !== null));
      this.waiting.delete(id);
      answer.body.destroy();
      return found;
    }
    const text = await readCapped(answer.body, MAX_BYTES, () => new ProbeError('The server sent more than 1 MB', 'unknown'));
    let found: Json | null = null;
    this.waiting.set(id, (m) => (found = m));
    this.deliver(text);
    this.waiting.delete(id);
    if (!found) throw new ProbeError('The server did not answer in JSON-RPC', 'unknown');
    return found;
  }

  async close(): Promise<void> {
    if (!this.sessionId || this.signal.aborted) return;
    const answer = await this.exchange(new URL(this.target.url), 'DELETE', { 'mcp-session-id': this.sessionId }).catch(() => null);
    answer?.body.resume();
  }
}

/** HTTP+SSE (2024-11-05): one event stream for answers, messages POSTed to the endpoint it names. */
class SseSession extends Session {
  private stream: IncomingMessage | null = null;
  private endpoint: URL | null = null;
  private ended: Promise<void> = Promise.resolve();

  async open(): Promise<void> {
    const url = new URL(this.target.url);
    const answer = await this.exchange(url, 'GET', { accept: 'text/event-stream' });
    if (answer.status !== 200) {
      answer.body.resume();
      throw new ProbeError(`The server answered HTTP ${answer.status}`, 'connection');
    }
    this.stream = answer.body;
    const named = new Promise<URL>((resolve, reject) => {
      this.ended = this.readEvents(answer.body, (event, data) => {
        if (event === 'endpoint') {
          const endpoint = new URL(data, url);
          // The messages go where the stream says, on the same origin only (no hop elsewhere).
          if (endpoint.origin !== url.origin) reject(new ProbeError('The server named an endpoint on another origin', 'unknown'));
          else resolve(endpoint);
        } else if (event === 'message') this.deliver(data);
        return false;
      }).then(
        () => reject(new ProbeError('The server closed its event stream', 'connection')),
        (error: unknown) => reject(error),
      );
    });
    this.endpoint = await named;
  }

  protected async post(message: Json, expectsAnswer: boolean): Promise<Json | null> {
    const id = message.id as number;
    const answered = expectsAnswer
      ? new Promise<Json>((resolve, reject) => {
          this.waiting.set(id, resolve);
          this.ended.then(() => reject(new ProbeError('The server closed its event stream', 'connection')), reject);
        })
      : null;
    answered?.catch(() => undefined);
    const answer = await this.exchange(this.endpoint!, 'POST', { 'content-type': 'application/json' }, JSON.stringify(message));
    answer.body.resume();
    if (answer.status < 200 || answer.status >= 300) throw new ProbeError(`The server answered HTTP ${answer.status}`, 'connection');
    if (!answered) return null;
    const abort = new Promise<never>((_, reject) =>
      this.signal.addEventListener('abort', () => reject(this.signal.reason), { once: true }),
    );
    try {
      return await Promise.race([answered, abort]);
    } finally {
      this.waiting.delete(id);
    }
  }

  async close(): Promise<void> {
    this.stream?.destroy();
  }
}
