// A stub OpenAI-compatible LLM on 127.0.0.1: POST /v1/chat/completions answers a fixed reply,
// as one JSON body or, with "stream": true, as server-sent chunks. Tests point an agent's LLM
// base URL here so a conversation runs end to end without a real provider or key, and
// can assert exactly what was sent (headers such as the API key, model, messages). With
// `steps`, the agent's turns (requests that offer tools) get one step each, in order (a tool
// call, e.g. the agent server's `terminal` then `finish`, or a text), the last one repeating:
// the step is chosen by the assistant turns already in the request's messages, so each
// conversation starts at the first step. Requests without tools (the agent server's title
// generation) get the plain reply. With
// costPerCall it reports what each answer cost the way a LiteLLM proxy does (the
// x-litellm-response-cost header, which the agent SDK takes as the call's cost); with
// keepThinking it answers every call with a call of the SDK's built-in think tool, so the
// agent keeps working (and spending) until it is paused.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { allowForSandboxes } from './sandbox-host-ports.js';

/** One answer of the agent's turn: a text, or a call of one of the tools the request offers. */
export type StubStep = string | { tool: string; arguments: Record<string, unknown> };

export interface StubLlm {
  /** OpenAI-style base URL including /v1, e.g. http://127.0.0.1:1234/v1. */
  url: string;
  /** Every request, with lower-cased header names and the parsed JSON body (raw text when not JSON). */
  requests: { headers: Record<string, string>; body: unknown }[];
  /** Changes the assistant reply for later requests. */
  setReply(text: string): void;
  /** Answers later requests with a think-tool call (true) or the plain reply (false). */
  setKeepThinking(on: boolean): void;
  /** Completions answered so far (each one reported costPerCall). */
  readonly answered: number;
  /** Holds every answer from now on (the agent waits for its LLM) until release(). */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

const DEFAULT_REPLY = 'Hello from the stub LLM.';

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

export interface StubLlmOptions {
  reply?: string;
  /** The agent's turns in order, the last repeating (see above). */
  steps?: StubStep[];
  /** Dollars each answer reports it cost (x-litellm-response-cost); none by default. */
  costPerCall?: number;
  /** Answer with think-tool calls, each with a new thought (so stuck detection never fires). */
  keepThinking?: boolean;
}

export async function startStubLlm(opts: StubLlmOptions = {}): Promise<StubLlm> {
  let reply = opts.reply ?? DEFAULT_REPLY;
  let keepThinking = opts.keepThinking ?? false;
  let thoughts = 0;
  const costHeader: Record<string, string> = opts.costPerCall === undefined ? {} : { 'x-litellm-response-cost': String(opts.costPerCall) };
  const requests: StubLlm['requests'] = [];
  let answered = 0;
  let held: (() => void)[] | null = null;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the raw text
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
      }
      requests.push({ headers, body });
      if (held) held.push(() => answer(req, res, body));
      else answer(req, res, body);
    });
  });

  /** Answers one request (at once, or when a hold is released). */
  const answer = (req: http.IncomingMessage, res: http.ServerResponse, body: unknown) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return json(res, 404, { error: { message: `Unknown request: ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
    if (typeof body !== 'object' || body === null) {
      return json(res, 400, { error: { message: 'Request body must be a JSON object', type: 'invalid_request_error' } });
    }
    const request = body as { model?: unknown; stream?: unknown; tools?: unknown; messages?: unknown };
    const model = typeof request.model === 'string' ? request.model : 'stub-model';
    const created = Math.floor(Date.now() / 1000);
    const usage = { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 };

    if (keepThinking) {
      const call = {
        id: `call_${++thoughts}`,
        type: 'function',
        function: { name: 'think', arguments: JSON.stringify({ thought: `Thought number ${thoughts}` }) },
      };
      answered++;
      return json(
        res,
        200,
        {
          id: `chatcmpl-stub-${thoughts}`,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [call] } }],
          usage,
        },
        costHeader,
      );
    }
    answered++;
    const steps = opts.steps ?? [];
    const messages = Array.isArray(request.messages) ? (request.messages as { role?: unknown }[]) : [];
    const turns = messages.filter((message) => message?.role === 'assistant').length;
    const step = steps.length && Array.isArray(request.tools) && request.tools.length ? steps[Math.min(turns, steps.length - 1)]! : reply;
    if (typeof step !== 'string')
      return toolCall(res, request.stream === true, { model, created, usage, headers: costHeader }, step, turns);
    if (request.stream !== true) {
      return json(
        res,
        200,
        {
          id: 'chatcmpl-stub',
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: step } }],
          usage,
        },
        costHeader,
      );
    }

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...costHeader });
    const send = (delta: Record<string, unknown>, finishReason: string | null, extra: Record<string, unknown> = {}) =>
      res.write(
        `data: ${JSON.stringify({
          id: 'chatcmpl-stub',
          object: 'chat.completion.chunk',
          created,
          model,
          choices: [{ index: 0, delta, finish_reason: finishReason }],
          ...extra,
        })}\n\n`,
      );
    send({ role: 'assistant', content: '' }, null);
    // Word by word (keeping the spaces), so clients really have to join several deltas.
    for (const piece of step.match(/\S+\s*|\s+/g) ?? []) send({ content: piece }, null);
    send({}, 'stop', { usage });
    res.end('data: [DONE]\n\n');
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const disallow = allowForSandboxes((server.address() as AddressInfo).port);
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setReply(text) {
      reply = text;
    },
    setKeepThinking(on) {
      keepThinking = on;
    },
    get answered() {
      return answered;
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = null;
      for (const send of waiting) send();
    },
    async close() {
      disallow();
      held = null;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A step's tool call, as one JSON body or as two chunks (the call, then the finish reason). */
function toolCall(
  res: http.ServerResponse,
  stream: boolean,
  meta: { model: string; created: number; usage: Record<string, number>; headers: Record<string, string> },
  step: { tool: string; arguments: Record<string, unknown> },
  turn: number,
): void {
  const call = { id: `call_stub_${turn}`, type: 'function', function: { name: step.tool, arguments: JSON.stringify(step.arguments) } };
  const base = { id: 'chatcmpl-stub', created: meta.created, model: meta.model };
  if (!stream) {
    return json(
      res,
      200,
      {
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [call] } }],
        usage: meta.usage,
      },
      meta.headers,
    );
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...meta.headers });
  const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
    );
  chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] }, null);
  chunk({}, 'tool_calls', { usage: meta.usage });
  res.end('data: [DONE]\n\n');
}
