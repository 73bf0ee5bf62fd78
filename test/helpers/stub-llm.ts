// A stub LLM provider on 127.0.0.1 that speaks the three API styles the agent's LLM client
// (litellm) sends, each as one JSON body or, with "stream": true, as server-sent events:
// - OpenAI Chat Completions: POST …/chat/completions (Authorization: Bearer), usage on the answer
//   or, streamed with stream_options.include_usage, on a last chunk with `choices: []`, as OpenAI does;
// - Anthropic Messages: POST …/v1/messages under any base path (litellm sends /v1/v1/messages for a
//   base ending in /v1), x-api-key, streamed as message_start … message_stop;
// - OpenAI Responses: POST …/responses, streamed as response.created … response.completed.
// Tests point an agent's LLM base URL here so a conversation runs end to end without a real
// provider or key, and can assert exactly what was sent (headers such as the API key, model,
// messages). With `steps`, the agent's turns (requests that offer tools) get one step each, in
// order (a tool call, e.g. the agent server's `terminal` then `finish`, or a text), the last one
// repeating: the step is chosen by the assistant turns already in the request's messages (or
// Responses input), so each conversation starts at the first step. Requests without tools (the
// agent server's title generation) get the plain reply. Every answer reports `usage` (STUB_USAGE
// unless set), so a test can work out the cost the agent or a gateway computes; with costPerCall
// it also reports what each answer cost the way a LiteLLM proxy does (the x-litellm-response-cost
// header, which the agent SDK takes as the call's cost); with keepThinking it answers every call
// with a call of the SDK's built-in think tool, so the agent keeps working (and spending) until it
// is paused. failNext answers the next calls with an error; chunkDelayMs spaces streamed events.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { allowForSandboxes } from './sandbox-host-ports.js';

/** One answer of the agent's turn: a text, or a call of one of the tools the request offers. */
export type StubStep = string | { tool: string; arguments: Record<string, unknown> };

/** The API styles the stub answers: Chat Completions, Anthropic Messages, Responses. */
export type StubApi = 'chat' | 'messages' | 'responses';

/**
 * The tokens each answer reports, in each style's own fields:
 * - chat: prompt_tokens = input, completion_tokens = output, prompt_tokens_details.cached_tokens = cached
 *   (OpenAI counts the cached tokens inside prompt_tokens; cacheWrite is not reported);
 * - messages: input_tokens = input, output_tokens = output, cache_read_input_tokens = cached,
 *   cache_creation_input_tokens = cacheWrite (Anthropic counts them apart from input_tokens: litellm's
 *   prompt_tokens is input + cached + cacheWrite);
 * - responses: input_tokens = input, output_tokens = output, input_tokens_details.cached_tokens = cached.
 */
export interface StubUsage {
  input: number;
  output: number;
  cached: number;
  cacheWrite: number;
}

/** The default usage: the numbers the issue 38 brief verified costs with (gpt-4o $9.375e-5, claude-sonnet-4-5 $0.0001464). */
export const STUB_USAGE: Readonly<StubUsage> = Object.freeze({ input: 11, output: 7, cached: 3, cacheWrite: 2 });

/** An error to answer with (failNext): the status, a Retry-After header, a body (the style's error shape by default). */
export interface StubFailure {
  status: number;
  /** Sent as the Retry-After header (seconds, or an HTTP date). */
  retryAfter?: number | string;
  /** The body, sent as JSON (a string as it is); by default the style's error object. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One request as received: lower-cased header names, the parsed JSON body (raw text when not JSON). */
export interface StubRequest {
  method: string;
  /** The path without the query, e.g. /v1/chat/completions or /v1/v1/messages. */
  path: string;
  /** The API style the path names, null for any other path. */
  api: StubApi | null;
  headers: Record<string, string>;
  body: unknown;
}

export interface StubLlm {
  /** OpenAI-style base URL including /v1, e.g. http://127.0.0.1:1234/v1 (chat, responses; Anthropic clients add /v1/messages to it too). */
  url: string;
  /** The bare origin, e.g. http://127.0.0.1:1234: Anthropic's base URL (litellm adds /v1/messages). */
  origin: string;
  /** Every request, in the order received. */
  requests: StubRequest[];
  /** Calls received per API style, failed ones included. */
  readonly calls: Readonly<Record<StubApi, number>>;
  /** Calls answered successfully so far, every style (each one reported costPerCall). */
  readonly answered: number;
  /** The usage each answer reports now. */
  readonly usage: Readonly<StubUsage>;
  /** Changes the assistant reply for later requests. */
  setReply(text: string): void;
  /** Answers later requests with a think-tool call (true) or the plain reply (false). */
  setKeepThinking(on: boolean): void;
  /** Changes the usage later answers report (the fields not given stay). */
  setUsage(usage: Partial<StubUsage>): void;
  /** Changes the gap between streamed events. */
  setChunkDelay(ms: number): void;
  /** Answers the next n calls (any style, after the hold and the API key check) with this error. */
  failNext(n: number, failure: StubFailure): void;
  /** Holds every answer from now on (the agent waits for its LLM) until release(). */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export interface StubLlmOptions {
  reply?: string;
  /** The agent's turns in order, the last repeating (see above). */
  steps?: StubStep[];
  /** Dollars each answer reports it cost (x-litellm-response-cost); none by default. */
  costPerCall?: number;
  /** Answer with think-tool calls, each with a new thought (so stuck detection never fires). */
  keepThinking?: boolean;
  /** The usage each answer reports; STUB_USAGE for the fields not given. */
  usage?: Partial<StubUsage>;
  /** Milliseconds between streamed events (each written and flushed on its own); 0 by default. */
  chunkDelayMs?: number;
  /** When set, calls must carry this key (Bearer for chat and responses, x-api-key for messages), else 401. */
  apiKey?: string;
}

const DEFAULT_REPLY = 'Hello from the stub LLM.';

type Answer = { kind: 'text'; text: string } | { kind: 'tool'; id: string; name: string; arguments: Record<string, unknown> };

/** What an answer is built from: the request's model, the step, the ids, the usage. */
interface Turn {
  model: string;
  stream: boolean;
  answer: Answer;
  usage: StubUsage;
  /** A number for the answer's ids. */
  n: number;
  /** For chat: stream_options.include_usage. */
  includeUsage: boolean;
}

/** One server-sent event: a name (Anthropic, Responses) or none (chat), and its data. */
type Sse = { event?: string; data: unknown };

export async function startStubLlm(opts: StubLlmOptions = {}): Promise<StubLlm> {
  let reply = opts.reply ?? DEFAULT_REPLY;
  let keepThinking = opts.keepThinking ?? false;
  let usage: StubUsage = { ...STUB_USAGE, ...opts.usage };
  let chunkDelayMs = opts.chunkDelayMs ?? 0;
  let thoughts = 0;
  let answers = 0;
  const costHeader: Record<string, string> = opts.costPerCall === undefined ? {} : { 'x-litellm-response-cost': String(opts.costPerCall) };
  const requests: StubRequest[] = [];
  const calls: Record<StubApi, number> = { chat: 0, messages: 0, responses: 0 };
  const failures: StubFailure[] = [];
  let answered = 0;
  let held: (() => void)[] | null = null;
  const closing = new AbortController();

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
      const method = req.method ?? 'GET';
      const path = (req.url ?? '').split('?')[0]!;
      const api = method === 'POST' ? apiOf(path) : null;
      requests.push({ method, path, api, headers, body });
      if (api) calls[api]++;
      const go = () => {
        answer(res, { method, path, api, headers, body }).catch((error: unknown) => {
          if (!res.headersSent) json(res, 500, { error: { message: String(error), type: 'server_error' } });
          else res.destroy();
        });
      };
      if (held) held.push(go);
      else go();
    });
  });

  /** Answers one request (at once, or when a hold is released). */
  const answer = async (res: http.ServerResponse, request: StubRequest): Promise<void> => {
    const { api, body, headers } = request;
    if (!api) {
      return json(res, 404, { error: { message: `Unknown request: ${request.method} ${request.path}`, type: 'invalid_request_error' } });
    }
    if (opts.apiKey !== undefined) {
      const given = api === 'messages' ? headers['x-api-key'] : headers.authorization?.replace(/^Bearer /, '');
      if (given !== opts.apiKey) return fail(res, api, { status: 401 });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return fail(res, api, { status: 400, body: errorBody(api, 400, 'Request body must be a JSON object') });
    }
    const failure = failures.shift();
    if (failure) return fail(res, api, failure);

    const fields = body as {
      model?: unknown;
      stream?: unknown;
      tools?: unknown;
      messages?: unknown;
      input?: unknown;
      stream_options?: unknown;
    };
    const steps = opts.steps ?? [];
    const turns = assistantTurns(api, fields);
    const callPrefix = api === 'messages' ? 'toolu' : 'call';
    let answer: Answer;
    let n = ++answers;
    if (keepThinking) {
      n = ++thoughts;
      answer = { kind: 'tool', id: `${callPrefix}_${n}`, name: 'think', arguments: { thought: `Thought number ${n}` } };
    } else {
      const offersTools = Array.isArray(fields.tools) && fields.tools.length > 0;
      const step = steps.length && offersTools ? steps[Math.min(turns, steps.length - 1)]! : reply;
      answer =
        typeof step === 'string'
          ? { kind: 'text', text: step }
          : { kind: 'tool', id: `${callPrefix}_stub_${turns}`, name: step.tool, arguments: step.arguments };
    }
    answered++;
    const turn: Turn = {
      model: typeof fields.model === 'string' ? fields.model : 'stub-model',
      stream: fields.stream === true,
      answer,
      usage: { ...usage },
      n,
      includeUsage: (fields.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true,
    };
    const build = api === 'chat' ? chat : api === 'messages' ? messages : responses;
    const out = build(turn, keepThinking);
    if (!turn.stream) return json(res, 200, out.body, costHeader);
    await streamEvents(res, out.events, costHeader);
  };

  const streamEvents = async (res: http.ServerResponse, events: (Sse | string)[], headers: Record<string, string>) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
    res.flushHeaders();
    for (const [i, event] of events.entries()) {
      if (i > 0 && chunkDelayMs > 0) {
        try {
          await sleep(chunkDelayMs, undefined, { signal: closing.signal });
        } catch {
          return; // closed
        }
      }
      if (res.destroyed) return;
      res.write(
        typeof event === 'string' ? event : `${event.event ? `event: ${event.event}\n` : ''}data: ${JSON.stringify(event.data)}\n\n`,
      );
    }
    res.end();
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const disallow = allowForSandboxes((server.address() as AddressInfo).port);
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    origin: `http://127.0.0.1:${port}`,
    requests,
    calls,
    get answered() {
      return answered;
    },
    get usage() {
      return usage;
    },
    setReply(text) {
      reply = text;
    },
    setKeepThinking(on) {
      keepThinking = on;
    },
    setUsage(next) {
      usage = { ...usage, ...next };
    },
    setChunkDelay(ms) {
      chunkDelayMs = ms;
    },
    failNext(n, failure) {
      for (let i = 0; i < n; i++) failures.push(failure);
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
      closing.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function apiOf(path: string): StubApi | null {
  if (path.endsWith('/chat/completions')) return 'chat';
  if (path.endsWith('/v1/messages')) return 'messages';
  if (path.endsWith('/responses')) return 'responses';
  return null;
}

/** The assistant turns already in a request: assistant messages, or for Responses each run of assistant items (message, function_call, reasoning). */
function assistantTurns(api: StubApi, body: { messages?: unknown; input?: unknown }): number {
  if (api !== 'responses') {
    const messages = Array.isArray(body.messages) ? (body.messages as { role?: unknown }[]) : [];
    return messages.filter((message) => message?.role === 'assistant').length;
  }
  const input = Array.isArray(body.input) ? (body.input as { role?: unknown; type?: unknown }[]) : [];
  let turns = 0;
  let inTurn = false;
  for (const item of input) {
    const assistant = item?.role === 'assistant' || item?.type === 'function_call' || item?.type === 'reasoning';
    if (assistant && !inTurn) turns++;
    inTurn = assistant;
  }
  return turns;
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

const ERROR_TYPES: Record<number, [openai: string, anthropic: string]> = {
  400: ['invalid_request_error', 'invalid_request_error'],
  401: ['authentication_error', 'authentication_error'],
  403: ['permission_error', 'permission_error'],
  404: ['not_found_error', 'not_found_error'],
  429: ['rate_limit_error', 'rate_limit_error'],
  529: ['server_error', 'overloaded_error'],
};

/** The style's error object: OpenAI's {error:{message,type,param,code}} or Anthropic's {type:'error', error:{type,message}}. */
function errorBody(api: StubApi, status: number, message = `Stub LLM failure ${status}`): unknown {
  const [openai, anthropic] =
    ERROR_TYPES[status] ?? (status >= 500 ? ['server_error', 'api_error'] : ['invalid_request_error', 'invalid_request_error']);
  return api === 'messages'
    ? { type: 'error', error: { type: anthropic, message } }
    : { error: { message, type: openai, param: null, code: null } };
}

function fail(res: http.ServerResponse, api: StubApi, failure: StubFailure): void {
  const headers: Record<string, string> = { ...failure.headers };
  if (failure.retryAfter !== undefined) headers['retry-after'] = String(failure.retryAfter);
  const body = failure.body === undefined ? errorBody(api, failure.status) : failure.body;
  if (typeof body === 'string') res.writeHead(failure.status, { 'content-type': 'text/plain', ...headers }).end(body);
  else json(res, failure.status, body, headers);
}

/** A text in pieces of a word each (keeping the spaces), so clients really have to join several deltas. */
const words = (text: string): string[] => text.match(/\S+\s*|\s+/g) ?? [];

/** A tool call's JSON arguments in about three pieces, as providers stream them. */
function pieces(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 3));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

type Built = { body: unknown; events: (Sse | string)[] };

function chat(turn: Turn, keepThinking: boolean): Built {
  const { answer, usage: u } = turn;
  const usage = {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cached },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  const base = {
    id: keepThinking ? `chatcmpl-stub-${turn.n}` : 'chatcmpl-stub',
    created: Math.floor(Date.now() / 1000),
    model: turn.model,
  };
  const call =
    answer.kind === 'tool'
      ? { id: answer.id, type: 'function', function: { name: answer.name, arguments: JSON.stringify(answer.arguments) } }
      : null;
  const finish = call ? 'tool_calls' : 'stop';
  const body = {
    ...base,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        finish_reason: finish,
        message: call
          ? { role: 'assistant', content: null, tool_calls: [call] }
          : { role: 'assistant', content: answer.kind === 'text' ? answer.text : '' },
      },
    ],
    usage,
  };
  // Streamed: with include_usage every chunk carries usage: null and a last chunk (no choices) the usage; without, none does.
  const extra = turn.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finishReason: string | null): Sse => ({
    data: { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra },
  });
  const events: (Sse | string)[] = [];
  if (call) {
    events.push(
      chunk(
        { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call, function: { name: call.function.name, arguments: '' } }] },
        null,
      ),
    );
    for (const part of pieces(call.function.arguments))
      events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }, null));
  } else {
    events.push(chunk({ role: 'assistant', content: '' }, null));
    for (const piece of words(answer.kind === 'text' ? answer.text : '')) events.push(chunk({ content: piece }, null));
  }
  events.push(chunk({}, finish));
  if (turn.includeUsage) events.push({ data: { ...base, object: 'chat.completion.chunk', choices: [], usage } });
  events.push('data: [DONE]\n\n');
  return { body, events };
}

function messages(turn: Turn): Built {
  const { answer, usage: u } = turn;
  const id = `msg_stub_${turn.n}`;
  const usage = {
    input_tokens: u.input,
    output_tokens: u.output,
    cache_read_input_tokens: u.cached,
    cache_creation_input_tokens: u.cacheWrite,
  };
  const block =
    answer.kind === 'tool'
      ? { type: 'tool_use', id: answer.id, name: answer.name, input: answer.arguments }
      : { type: 'text', text: answer.text };
  const stopReason = answer.kind === 'tool' ? 'tool_use' : 'end_turn';
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model: turn.model,
    content: [block],
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
  const event = (name: string, data: Record<string, unknown>): Sse => ({ event: name, data: { type: name, ...data } });
  const events: Sse[] = [
    event('message_start', {
      message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: Math.min(1, u.output) } },
    }),
    event('ping', {}),
  ];
  if (answer.kind === 'tool') {
    events.push(event('content_block_start', { index: 0, content_block: { ...block, input: {} } }));
    for (const part of pieces(JSON.stringify(answer.arguments))) {
      events.push(event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: part } }));
    }
  } else {
    events.push(event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
    for (const piece of words(answer.text))
      events.push(event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }));
  }
  events.push(
    event('content_block_stop', { index: 0 }),
    // The usage here is cumulative, output tokens only (input and cache came with message_start).
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: u.output } }),
    event('message_stop', {}),
  );
  return { body: message, events };
}

function responses(turn: Turn): Built {
  const { answer, usage: u } = turn;
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.input + u.output,
  };
  const item =
    answer.kind === 'tool'
      ? {
          type: 'function_call',
          id: `fc_${answer.id.replace(/^call_/, '')}`,
          call_id: answer.id,
          name: answer.name,
          arguments: JSON.stringify(answer.arguments),
          status: 'completed',
        }
      : {
          type: 'message',
          id: `msg_stub_${turn.n}`,
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: answer.text, annotations: [], logprobs: [] }],
        };
  const response = {
    id: `resp_stub_${turn.n}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    error: null,
    incomplete_details: null,
    instructions: null,
    model: turn.model,
    output: [item],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage,
  };
  let sequence = 0;
  const event = (name: string, data: Record<string, unknown>): Sse => ({
    event: name,
    data: { type: name, sequence_number: sequence++, ...data },
  });
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  const events: Sse[] = [event('response.created', { response: pending }), event('response.in_progress', { response: pending })];
  const at = { item_id: item.id, output_index: 0 };
  if (answer.kind === 'tool') {
    events.push(event('response.output_item.added', { output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } }));
    for (const part of pieces(JSON.stringify(answer.arguments)))
      events.push(event('response.function_call_arguments.delta', { ...at, delta: part }));
    events.push(event('response.function_call_arguments.done', { ...at, name: answer.name, arguments: JSON.stringify(answer.arguments) }));
  } else {
    const part = { type: 'output_text', text: '', annotations: [] };
    events.push(
      event('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
      event('response.content_part.added', { ...at, content_index: 0, part }),
    );
    for (const piece of words(answer.text))
      events.push(event('response.output_text.delta', { ...at, content_index: 0, delta: piece, logprobs: [] }));
    events.push(
      event('response.output_text.done', { ...at, content_index: 0, text: answer.text, logprobs: [] }),
      event('response.content_part.done', { ...at, content_index: 0, part: { ...part, text: answer.text } }),
    );
  }
  events.push(event('response.output_item.done', { output_index: 0, item }), event('response.completed', { response }));
  return { body: response, events };
}
