// The LLM gateway's HTTP side (docs/llm-gateway.md): /llm/… on the service's own port, the one
// address sandboxes already reach. A call is read whole (bounded), allowed or refused by the
// gateway (src/llm-gateway/), then forwarded with the owner's key; a streamed answer passes
// through chunk by chunk as it arrives (its usage read on the way), a JSON answer is read whole
// (bounded) so that its cost can go back in x-litellm-response-cost (the agent SDK's own
// accounting then matches the gateway's). Provider errors pass through as they are (status,
// Retry-After, body), with the owner's key taken out of any text that echoes it.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { StreamUsageTap, usageOfAnswer } from '../llm-gateway/answer-usage.js';
import { GatewayRefusal, type CallOutcome, type GatewayCall, type LlmGateway } from '../llm-gateway/llm-gateway.service.js';
import { apiStyleOf, familyOf, passedAnswerHeader, presentedToken, upstreamHeaders, type Family } from '../llm-gateway/upstream.js';
import type { Logger } from '../logger.js';
import { MCP_PATH, serveMcp } from './mcp-gateway.js';

const PREFIX = /^\/llm(?=\/)/i;

/** The handler of /llm/…; false for any other path. */
export function llmGatewayMount(gateway: LlmGateway | null, log: Logger) {
  const agents = {
    any: { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) },
    checked: gateway
      ? {
          'http:': new http.Agent({ keepAlive: true, lookup: gateway.lookup }),
          'https:': new https.Agent({ keepAlive: true, lookup: gateway.lookup }),
        }
      : null,
  };
  return (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    if (!PREFIX.test(path)) return false;
    const mcp = MCP_PATH.exec(path);
    if (mcp && gateway && agents.checked) {
      const checked = agents.checked;
      serveMcp(gateway, { any: agents.any, checked }, mcp, req, res, log).catch((error: unknown) => {
        log.error({ err: error }, 'MCP gateway call failed');
        if (!res.headersSent) refuse(res, 'openai', new GatewayRefusal(502, 'gateway_error', 'The gateway failed this call'));
        else res.destroy();
      });
      return true;
    }
    const style = apiStyleOf(req.method ?? '', path.replace(PREFIX, ''));
    if (!gateway) {
      refuse(res, 'openai', new GatewayRefusal(404, 'not_found', 'The LLM gateway is off on this service (LLM_GATEWAY=off)'));
      return true;
    }
    if (!style) {
      refuse(res, 'openai', new GatewayRefusal(404, 'not_found', `No LLM API at ${req.method} ${path}`));
      return true;
    }
    // litellm_proxy models ask for model info first; none is offered (the agent then uses its own tables).
    if (style === 'model-info') {
      sendJson(res, 200, { data: [] });
      return true;
    }
    serve(gateway, agents, style, req, res, log).catch((error: unknown) => {
      log.error({ err: error }, 'LLM gateway call failed');
      if (!res.headersSent) refuse(res, familyOf(style), new GatewayRefusal(502, 'gateway_error', 'The LLM gateway failed this call'));
      else res.destroy();
    });
    return true;
  };
}

type Agents = { 'http:': http.Agent; 'https:': https.Agent };

async function serve(
  gateway: LlmGateway,
  agents: { any: Agents; checked: Agents | null },
  style: GatewayCall['style'],
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
): Promise<void> {
  const family = familyOf(style);
  const { maxRequestBytes, maxAnswerBytes, timeoutMs } = gateway.limits;
  let raw: Buffer;
  let body: Record<string, unknown>;
  try {
    raw = await readBounded(req, maxRequestBytes);
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new GatewayRefusal(400, 'invalid_request_error', 'The body must be a JSON object');
    body = parsed as Record<string, unknown>;
  } catch (error) {
    return refuse(
      res,
      family,
      error instanceof GatewayRefusal ? error : new GatewayRefusal(400, 'invalid_request_error', 'The body is not JSON'),
    );
  }
  let call: GatewayCall;
  try {
    call = await gateway.begin(style, presentedToken(req.headers), body);
  } catch (error) {
    if (error instanceof GatewayRefusal) return refuse(res, family, error);
    throw error;
  }
  // A streamed chat call asks for its usage (the last chunk), as the agent SDK itself does.
  if (
    style === 'chat' &&
    body.stream === true &&
    (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage !== true
  ) {
    body.stream_options = { ...(body.stream_options as object | undefined), include_usage: true };
    raw = Buffer.from(JSON.stringify(body));
  }
  const streamed = body.stream === true;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  timer.unref();
  let outcome: CallOutcome = 'ok';
  let status: number | null = null;
  const tap = new StreamUsageTap(style);
  let usage: ReturnType<StreamUsageTap['usage']> = null;
  // The agent went away: the provider's call is cut too (it stops generating, and billing).
  res.once('close', () => {
    if (!res.writableFinished) {
      outcome = 'aborted';
      abort.abort();
    }
  });
  try {
    const answer = await send(call, raw, req.headers, call.reach === 'any' || !agents.checked ? agents.any : agents.checked, abort.signal);
    status = answer.statusCode ?? 502;
    const headers = passedHeaders(answer);
    if (status >= 400) {
      outcome = 'provider_error';
      const text = await readBounded(answer, 1024 * 1024).catch(() => Buffer.from(''));
      const scrubbed = scrub(text.toString('utf8'), call.key);
      res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(scrubbed) }).end(scrubbed);
      return;
    }
    if (streamed || String(answer.headers['content-type'] ?? '').includes('text/event-stream')) {
      res.writeHead(status, headers);
      // The head goes out now, or with the first event when that came with the provider's head.
      if (answer.readableLength === 0) res.flushHeaders();
      try {
        await passThrough(answer, res, maxAnswerBytes, (chunk) => tap.write(chunk));
      } catch (error) {
        if (error instanceof GatewayRefusal) outcome = 'too_large';
        throw error;
      }
      usage = tap.usage();
      res.end();
      return;
    }
    const text = await readBounded(answer, maxAnswerBytes).catch((error: unknown) => {
      if (error instanceof GatewayRefusal) outcome = 'too_large';
      throw error;
    });
    try {
      usage = usageOfAnswer(style, JSON.parse(text.toString('utf8')));
    } catch {
      usage = null;
    }
    // The agent's own accounting takes this header as the call's cost (so both ledgers agree).
    const costHeader = usage ? { 'x-litellm-response-cost': String(gateway.cost(call, usage)) } : {};
    res.writeHead(status, { ...headers, ...costHeader, 'content-length': text.byteLength }).end(text);
  } catch (error) {
    if (outcome === 'ok') outcome = abort.signal.aborted ? 'aborted' : 'unreachable';
    if (outcome === 'unreachable') log.warn({ err: error, conversationId: call.route.conversationId }, 'LLM provider unreachable');
    if (!res.headersSent) {
      const refusal =
        (outcome as CallOutcome) === 'too_large' // set in the try's own catch, which the compiler does not follow here
          ? new GatewayRefusal(502, 'answer_too_large', 'The provider’s answer is larger than LLM_MAX_ANSWER_SIZE')
          : abort.signal.aborted && outcome !== 'aborted'
            ? new GatewayRefusal(504, 'timeout', 'The LLM provider did not answer in time')
            : new GatewayRefusal(502, 'upstream_unreachable', 'The LLM provider could not be reached');
      refuse(res, family, refusal);
    } else res.destroy();
    usage = usage ?? tap.usage();
  } finally {
    clearTimeout(timer);
    await gateway.end(call, outcome, status, usage);
  }
}

function send(
  call: GatewayCall,
  raw: Buffer,
  incoming: IncomingMessage['headers'],
  agents: Agents,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const url = new URL(call.url);
  const request = url.protocol === 'https:' ? https.request : http.request;
  const headers = upstreamHeaders(call.style, incoming, call.key, raw.byteLength);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers, agent: agents[url.protocol as 'http:' | 'https:'], signal }, resolve);
    req.once('error', reject);
    req.end(raw);
  });
}

function passedHeaders(answer: IncomingMessage): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && passedAnswerHeader(name)) headers[name] = value;
  return headers;
}

/** The owner's key out of a provider's text (some echo it, some its last characters after a mask). */
function scrub(text: string, key: string | null): string {
  if (!key || key.length < 8) return text;
  return text.split(key).join('[redacted]').split(key.slice(-4)).join('****');
}

/** Writes the answer through as it comes (the agent's pace: paused while the agent's socket is full), each chunk seen first. */
function passThrough(answer: IncomingMessage, res: ServerResponse, maxBytes: number, see: (chunk: Buffer) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let size = 0;
    const fail = (error: Error) => {
      answer.destroy();
      res.destroy();
      reject(error);
    };
    answer.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > maxBytes) return fail(new GatewayRefusal(502, 'answer_too_large', `The answer is larger than ${maxBytes} bytes`));
      see(chunk);
      if (!res.write(chunk)) {
        answer.pause();
        res.once('drain', () => answer.resume());
      }
    });
    answer.once('end', resolve);
    answer.once('error', fail);
    // The provider's connection closed before the answer ended.
    answer.once('close', () => (answer.readableEnded ? undefined : fail(new Error('the provider closed the answer early'))));
  });
}

async function readBounded(stream: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(stream.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes)
    throw new GatewayRefusal(413, 'request_too_large', `The body is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).byteLength;
    if (size > maxBytes) {
      stream.destroy();
      throw new GatewayRefusal(413, 'request_too_large', `The body is larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** A refusal in the shape the agent's client reads for its provider family. */
function refuse(res: ServerResponse, family: Family, refusal: GatewayRefusal): void {
  const body =
    family === 'anthropic'
      ? { type: 'error', error: { type: refusal.type, message: refusal.message } }
      : { error: { message: refusal.message, type: refusal.type, code: refusal.type } };
  if (refusal.retryAfterSeconds) res.setHeader('retry-after', String(refusal.retryAfterSeconds));
  sendJson(res, refusal.status, body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}
