// Remote MCP servers through the gateway (docs/llm-gateway.md, MCP servers): the agent's MCP
// client calls /llm/mcp/<name> with its conversation's token, and the call goes on to the
// server with the owner's key in Authorization — streamable HTTP's POST, GET and DELETE, and the
// legacy SSE transport, whose "endpoint" event (where to POST messages) is pointed back at the
// gateway (/llm/mcp/<name>/messages?to=…, on the server's own origin only). Bodies and event
// streams pass through as they come, never held whole.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { GatewayRefusal, type LlmGateway, type McpCall } from '../llm-gateway/llm-gateway.service.js';
import { presentedToken } from '../llm-gateway/upstream.js';
import type { Logger } from '../logger.js';

export const MCP_PATH = /^\/llm\/mcp\/([\w-]{1,64})(\/messages)?$/;

const PASSED_REQUEST = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'cache-control'];
const PASSED_ANSWER = ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'cache-control', 'retry-after'];

type Agents = { 'http:': http.Agent; 'https:': https.Agent };

export async function serveMcp(
  gateway: LlmGateway,
  agents: { any: Agents; checked: Agents },
  match: RegExpExecArray,
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
): Promise<void> {
  const name = match[1]!;
  const query = new URL(req.url ?? '/', 'http://gateway').searchParams;
  const messages = match[2] !== undefined;
  let call: McpCall;
  try {
    call = await gateway.beginMcp(presentedToken(req.headers), name, messages ? (query.get('to') ?? '') : null);
  } catch (error) {
    if (error instanceof GatewayRefusal) return refuse(res, error);
    throw error;
  }
  const url = new URL(call.url);
  const headers: Record<string, string> = {};
  for (const header of PASSED_REQUEST) {
    const value = req.headers[header];
    if (typeof value === 'string') headers[header] = value;
  }
  if (req.headers['content-length']) headers['content-length'] = String(req.headers['content-length']);
  for (const [header, value] of Object.entries(call.server.headers ?? {})) headers[header.toLowerCase()] = value;
  if (call.server.apiKey) headers.authorization = `Bearer ${call.server.apiKey}`;
  const abort = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const request = url.protocol === 'https:' ? https.request : http.request;
  const agent = (call.reach === 'any' ? agents.any : agents.checked)[url.protocol as 'http:' | 'https:'];
  const upstream = request(url, { method: req.method, headers, agent, signal: abort.signal });
  upstream.once('error', (error) => {
    if (abort.signal.aborted) return;
    log.warn({ err: error, server: name }, 'MCP server unreachable');
    if (!res.headersSent) refuse(res, new GatewayRefusal(502, 'upstream_unreachable', 'The MCP server could not be reached'));
    else res.destroy();
  });
  upstream.once('response', (answer) => {
    const passed: Record<string, string | string[]> = {};
    for (const header of PASSED_ANSWER) {
      const value = answer.headers[header];
      if (value !== undefined) passed[header] = value;
    }
    res.writeHead(answer.statusCode ?? 502, passed);
    res.flushHeaders();
    const sse = String(answer.headers['content-type'] ?? '').includes('text/event-stream');
    // Only the legacy SSE transport names an endpoint; the rest passes byte for byte.
    if (sse && name.startsWith('sse_')) {
      const rewrite = endpointRewriter(name, call.url);
      answer.on('data', (chunk: Buffer) => res.write(rewrite(chunk.toString('utf8'))));
      answer.once('end', () => res.end(rewrite('', true)));
    } else answer.pipe(res);
    answer.once('error', () => res.destroy());
  });
  req.pipe(upstream);
}

/** Rewrites an SSE stream's "endpoint" events so the agent posts its messages through the gateway. */
function endpointRewriter(name: string, serverUrl: string) {
  let pending = '';
  let endpointNext = false;
  const line = (raw: string): string => {
    const clean = raw.replace(/\r$/, '');
    if (clean.startsWith('event:')) endpointNext = clean.slice(6).trim() === 'endpoint';
    else if (endpointNext && clean.startsWith('data:')) {
      endpointNext = false;
      const target = new URL(clean.slice(5).trim(), serverUrl).href;
      return `data: /llm/mcp/${name}/messages?to=${encodeURIComponent(target)}`;
    } else if (clean === '') endpointNext = false;
    return raw;
  };
  // Whole lines only; a line cut between chunks waits for its end.
  return (text: string, last = false): string => {
    const lines = (pending + text).split('\n');
    pending = lines.pop()!;
    let out = lines.map((l) => `${line(l)}\n`).join('');
    if (last) {
      out += pending;
      pending = '';
    }
    return out;
  };
}

function refuse(res: ServerResponse, refusal: GatewayRefusal): void {
  const text = JSON.stringify({ error: { message: refusal.message, type: refusal.type, code: refusal.type } });
  if (refusal.retryAfterSeconds) res.setHeader('retry-after', String(refusal.retryAfterSeconds));
  res.writeHead(refusal.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
