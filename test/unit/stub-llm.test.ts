// The stub LLM (test/helpers/stub-llm.ts) in each API style the agent's LLM client sends: Chat
// Completions, Anthropic Messages and Responses, as JSON and as server-sent events; the steps, the
// usage, the injected errors and the spacing of streamed events, driven with Node's fetch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STUB_USAGE, startStubLlm, type StubLlm } from '../helpers/stub-llm.js';

const ARGS = { command: 'ls -la', is_input: false };
const STEPS = [{ tool: 'terminal', arguments: ARGS }, 'All done.'];
const TOOLS_CHAT = [{ type: 'function', function: { name: 'terminal', parameters: { type: 'object' } } }];
const TOOLS_ANTHROPIC = [{ name: 'terminal', input_schema: { type: 'object' } }];
const TOOLS_RESPONSES = [{ type: 'function', name: 'terminal', parameters: { type: 'object' } }];

let llm: StubLlm;

beforeAll(async () => {
  llm = await startStubLlm({ steps: STEPS, costPerCall: 0.25 });
});

afterAll(async () => {
  await llm?.close();
});

/** Node's fetch, its json() typed loosely for the assertions. */
type Answer = Omit<Response, 'json'> & { json(): Promise<any> };

function post(path: string, body: unknown, headers: Record<string, string> = {}, base = llm.origin): Promise<Answer> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', ...headers },
    body: JSON.stringify(body),
  });
}

/** A server-sent event stream as its events: the name (if any) and the parsed data ('[DONE]' kept as text). */
async function events(res: Answer): Promise<{ event?: string; data: any }[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const out: { event?: string; data: any }[] = [];
  for (const block of (await res.text()).split('\n\n').filter(Boolean)) {
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)![1]!;
    out.push({ ...(event ? { event } : {}), data: data === '[DONE]' ? data : JSON.parse(data) });
  }
  return out;
}

const user = [{ role: 'user', content: 'Hi' }];
const afterToolCall = [...user, { role: 'assistant', content: null, tool_calls: [] }, { role: 'tool', content: 'ok' }];

describe('chat completions', () => {
  it('answers JSON with usage and the cost header, and logs the call', async () => {
    const before = { ...llm.calls };
    const res = await post('/v1/chat/completions', { model: 'gpt-4o', messages: user });
    expect(res.headers.get('x-litellm-response-cost')).toBe('0.25');
    expect(await res.json()).toMatchObject({
      id: 'chatcmpl-stub',
      object: 'chat.completion',
      model: 'gpt-4o',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello from the stub LLM.' } }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 } },
    });
    expect(llm.calls).toEqual({ ...before, chat: before.chat + 1 });
    expect(llm.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      api: 'chat',
      headers: { authorization: 'Bearer sk-test' },
    });
    // The base URL without /v1 works too.
    expect((await post('/chat/completions', { model: 'gpt-4o', messages: user })).status).toBe(200);
  });

  it('streams with a last usage chunk only when include_usage asks for it', async () => {
    const withUsage = await events(
      await post('/v1/chat/completions', { model: 'gpt-4o', messages: user, stream: true, stream_options: { include_usage: true } }),
    );
    expect(withUsage.at(-1)!.data).toBe('[DONE]');
    const chunks = withUsage.slice(0, -1).map((e) => e.data);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello from the stub LLM.');
    expect(chunks.at(-2)).toMatchObject({ choices: [{ delta: {}, finish_reason: 'stop' }], usage: null });
    expect(chunks.at(-1)).toMatchObject({
      object: 'chat.completion.chunk',
      choices: [],
      usage: { prompt_tokens: 11, completion_tokens: 7 },
    });

    const without = (await events(await post('/v1/chat/completions', { model: 'gpt-4o', messages: user, stream: true }))).slice(0, -1);
    expect(without.every((e) => !('usage' in e.data) && e.data.choices.length === 1)).toBe(true);
  });

  it('answers the steps by the assistant turns, the call without tools with the reply', async () => {
    const first = await (await post('/v1/chat/completions', { model: 'm', messages: user, tools: TOOLS_CHAT })).json();
    expect(first.choices[0]).toEqual({
      index: 0,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_stub_0', type: 'function', function: { name: 'terminal', arguments: JSON.stringify(ARGS) } }],
      },
    });
    const second = await (await post('/v1/chat/completions', { model: 'm', messages: afterToolCall, tools: TOOLS_CHAT })).json();
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'All done.' } });

    // Streamed, the arguments come in pieces after the call's id and name.
    const streamed = (await events(await post('/v1/chat/completions', { model: 'm', messages: user, tools: TOOLS_CHAT, stream: true })))
      .slice(0, -1)
      .map((e) => e.data.choices[0]);
    expect(streamed[0].delta.tool_calls[0]).toMatchObject({ index: 0, id: 'call_stub_0', function: { name: 'terminal', arguments: '' } });
    const args = streamed
      .flatMap((c: any) => c.delta.tool_calls ?? [])
      .map((t: any) => t.function.arguments)
      .join('');
    expect(JSON.parse(args)).toEqual(ARGS);
    expect(streamed.slice(1, -1).length).toBeGreaterThan(1);
    expect(streamed.at(-1)).toMatchObject({ finish_reason: 'tool_calls' });
  });
});

describe('anthropic messages', () => {
  const body = {
    model: 'claude-sonnet-4-5-20250929',
    max_tokens: 64000,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
  };
  const anthropic = { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' };

  it('answers JSON at /v1/messages and under a /v1 base (/v1/v1/messages)', async () => {
    const before = llm.calls.messages;
    for (const path of ['/v1/messages', '/v1/v1/messages']) {
      const res = await post(path, body, anthropic);
      expect(res.headers.get('x-litellm-response-cost')).toBe('0.25');
      expect(await res.json()).toMatchObject({
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [{ type: 'text', text: 'Hello from the stub LLM.' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 11, output_tokens: 7, cache_read_input_tokens: 3, cache_creation_input_tokens: 2 },
      });
    }
    expect(llm.calls.messages).toBe(before + 2);
    expect(llm.requests.at(-1)).toMatchObject({ path: '/v1/v1/messages', api: 'messages', headers: { 'x-api-key': 'sk-ant' } });
  });

  it('answers the steps with tool_use, then the text', async () => {
    const tool = await (await post('/v1/messages', { ...body, tools: TOOLS_ANTHROPIC }, anthropic)).json();
    expect(tool).toMatchObject({
      stop_reason: 'tool_use',
      content: [{ type: 'tool_use', id: 'toolu_stub_0', name: 'terminal', input: ARGS }],
    });
    const turns = [
      ...body.messages,
      { role: 'assistant', content: tool.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_stub_0', content: 'ok' }] },
    ];
    const text = await (await post('/v1/messages', { ...body, messages: turns, tools: TOOLS_ANTHROPIC }, anthropic)).json();
    expect(text).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'All done.' }] });
  });

  it('streams the real event sequence, text and tool input alike', async () => {
    const text = await events(await post('/v1/messages', { ...body, stream: true }, anthropic));
    expect(text.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      ...Array(5).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(text.every((e) => e.data.type === e.event)).toBe(true);
    expect(text[0]!.data.message).toMatchObject({
      type: 'message',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 11, output_tokens: 1, cache_read_input_tokens: 3, cache_creation_input_tokens: 2 },
    });
    const deltas = text.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta);
    expect(deltas.every((d) => d.type === 'text_delta')).toBe(true);
    expect(deltas.map((d) => d.text).join('')).toBe('Hello from the stub LLM.');
    expect(text.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 7 },
    });

    const tool = await events(await post('/v1/messages', { ...body, tools: TOOLS_ANTHROPIC, stream: true }, anthropic));
    expect(tool[2]!.data.content_block).toEqual({ type: 'tool_use', id: 'toolu_stub_0', name: 'terminal', input: {} });
    const json = tool.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta);
    expect(json.every((d) => d.type === 'input_json_delta')).toBe(true);
    expect(JSON.parse(json.map((d) => d.partial_json).join(''))).toEqual(ARGS);
    expect(tool.at(-2)!.data.delta.stop_reason).toBe('tool_use');
  });
});

describe('responses', () => {
  const body = { model: 'gpt-5-mini', instructions: 'Be brief.', input: [{ role: 'user', content: 'Hi' }], store: false };

  it('answers a Responses object at /responses and /v1/responses', async () => {
    const before = llm.calls.responses;
    for (const path of ['/responses', '/v1/responses']) {
      expect(await (await post(path, body)).json()).toMatchObject({
        object: 'response',
        status: 'completed',
        model: 'gpt-5-mini',
        output: [
          { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello from the stub LLM.' }] },
        ],
        usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18, input_tokens_details: { cached_tokens: 3 } },
      });
    }
    expect(llm.calls.responses).toBe(before + 2);
  });

  it('answers the steps with function_call items, counting turns by runs of assistant items', async () => {
    const tool = await (await post('/v1/responses', { ...body, tools: TOOLS_RESPONSES })).json();
    expect(tool.output).toEqual([
      {
        type: 'function_call',
        id: 'fc_stub_0',
        call_id: 'call_stub_0',
        name: 'terminal',
        arguments: JSON.stringify(ARGS),
        status: 'completed',
      },
    ]);
    const input = [
      ...body.input,
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'function_call', call_id: 'call_stub_0', name: 'terminal', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_stub_0', output: 'ok' },
    ];
    const text = await (await post('/v1/responses', { ...body, input, tools: TOOLS_RESPONSES })).json();
    expect(text.output[0]).toMatchObject({ type: 'message', content: [{ text: 'All done.' }] });
  });

  it('streams response.created … response.completed with the usage', async () => {
    const text = await events(await post('/v1/responses', { ...body, stream: true }));
    expect(text.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(5).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(text.map((e) => e.data.sequence_number)).toEqual(text.map((_, i) => i));
    expect(text[0]!.data.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    const deltas = text.filter((e) => e.event === 'response.output_text.delta');
    expect(deltas.map((e) => e.data.delta).join('')).toBe('Hello from the stub LLM.');
    expect(text.at(-1)!.data.response).toMatchObject({ status: 'completed', usage: { input_tokens: 11, output_tokens: 7 } });

    const tool = await events(await post('/v1/responses', { ...body, tools: TOOLS_RESPONSES, stream: true }));
    const args = tool.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta);
    expect(JSON.parse(args.join(''))).toEqual(ARGS);
    expect(tool.find((e) => e.event === 'response.function_call_arguments.done')!.data).toMatchObject({
      item_id: 'fc_stub_0',
      name: 'terminal',
    });
    expect(tool.at(-1)!.data.response.output[0]).toMatchObject({ type: 'function_call', call_id: 'call_stub_0' });
  });
});

describe('usage, errors, timing', () => {
  it('reports the usage set, per style', async () => {
    const stub = await startStubLlm({ usage: { input: 100 } });
    try {
      expect(stub.usage).toEqual({ ...STUB_USAGE, input: 100 });
      stub.setUsage({ output: 50, cached: 40, cacheWrite: 20 });
      const chat = await (await post('/v1/chat/completions', { model: 'm', messages: user }, {}, stub.origin)).json();
      expect(chat.usage).toMatchObject({
        prompt_tokens: 100,
        completion_tokens: 50,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 40 },
      });
      const message = await (await post('/v1/messages', { model: 'c', messages: user }, {}, stub.origin)).json();
      expect(message.usage).toEqual({ input_tokens: 100, output_tokens: 50, cache_read_input_tokens: 40, cache_creation_input_tokens: 20 });
      const response = await (await post('/v1/responses', { model: 'r', input: user }, {}, stub.origin)).json();
      expect(response.usage).toMatchObject({ input_tokens: 100, output_tokens: 50, input_tokens_details: { cached_tokens: 40 } });
      expect(stub.answered).toBe(3);
    } finally {
      await stub.close();
    }
  });

  it('answers the next calls with an injected error in the style’s shape, then answers again', async () => {
    const stub = await startStubLlm({ costPerCall: 0.5 });
    try {
      stub.failNext(2, { status: 429, retryAfter: 7 });
      const limited = await post('/v1/chat/completions', { model: 'm', messages: user }, {}, stub.origin);
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('7');
      expect(limited.headers.get('x-litellm-response-cost')).toBeNull();
      expect(await limited.json()).toEqual({
        error: { message: 'Stub LLM failure 429', type: 'rate_limit_error', param: null, code: null },
      });
      const anthropic = await post('/v1/messages', { model: 'c', messages: user, stream: true }, {}, stub.origin);
      expect(anthropic.status).toBe(429);
      expect(await anthropic.json()).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Stub LLM failure 429' } });
      expect((await post('/v1/chat/completions', { model: 'm', messages: user }, {}, stub.origin)).status).toBe(200);

      const budget = { error: { message: 'Budget has been exceeded! Current cost: 5.1, Max budget: 5.0', type: 'budget_exceeded' } };
      stub.failNext(1, { status: 429, body: budget });
      stub.failNext(1, { status: 500 });
      const denied = await post('/v1/responses', { model: 'r', input: user }, {}, stub.origin);
      expect([denied.status, await denied.json()]).toEqual([429, budget]);
      const broken = await post('/v1/responses', { model: 'r', input: user }, {}, stub.origin);
      expect([broken.status, await broken.json()]).toEqual([
        500,
        { error: { message: 'Stub LLM failure 500', type: 'server_error', param: null, code: null } },
      ]);
      expect((await post('/v1/responses', { model: 'r', input: user }, {}, stub.origin)).status).toBe(200);

      expect(stub.calls).toEqual({ chat: 2, messages: 1, responses: 3 });
      expect(stub.answered).toBe(2);
    } finally {
      await stub.close();
    }
  });

  it('checks the API key when given one: Bearer, or x-api-key for messages', async () => {
    const stub = await startStubLlm({ apiKey: 'sk-right' });
    try {
      const wrong = await post('/v1/chat/completions', { model: 'm', messages: user }, { authorization: 'Bearer sk-wrong' }, stub.origin);
      expect([wrong.status, (await wrong.json()).error.type]).toEqual([401, 'authentication_error']);
      expect(
        (await post('/v1/chat/completions', { model: 'm', messages: user }, { authorization: 'Bearer sk-right' }, stub.origin)).status,
      ).toBe(200);
      const bearer = await post('/v1/messages', { model: 'c', messages: user }, { authorization: 'Bearer sk-right' }, stub.origin);
      expect([bearer.status, (await bearer.json()).error.type]).toEqual([401, 'authentication_error']);
      expect((await post('/v1/messages', { model: 'c', messages: user }, { 'x-api-key': 'sk-right' }, stub.origin)).status).toBe(200);
    } finally {
      await stub.close();
    }
  });

  it('answers keepThinking with think calls in every style', async () => {
    const stub = await startStubLlm({ keepThinking: true });
    try {
      const chat = await (await post('/v1/chat/completions', { model: 'm', messages: user }, {}, stub.origin)).json();
      expect(chat.choices[0].message.tool_calls[0]).toMatchObject({ id: 'call_1', function: { name: 'think' } });
      const message = await (await post('/v1/messages', { model: 'c', messages: user }, {}, stub.origin)).json();
      expect(message.content[0]).toEqual({ type: 'tool_use', id: 'toolu_2', name: 'think', input: { thought: 'Thought number 2' } });
      const response = await (await post('/v1/responses', { model: 'r', input: user }, {}, stub.origin)).json();
      expect(response.output[0]).toMatchObject({ type: 'function_call', call_id: 'call_3', name: 'think' });
    } finally {
      await stub.close();
    }
  });

  it('spaces streamed events by chunkDelayMs: the first token arrives well before the last', async () => {
    const stub = await startStubLlm({ chunkDelayMs: 40, reply: 'one two three four five six' });
    try {
      for (const [path, body] of [
        ['/v1/chat/completions', { model: 'm', messages: user, stream: true }],
        ['/v1/messages', { model: 'c', messages: user, stream: true }],
        ['/v1/responses', { model: 'r', input: user, stream: true }],
      ] as const) {
        const res = await post(path, body, {}, stub.origin);
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        let firstWord = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
          if (!firstWord && text.includes('one ')) firstWord = performance.now();
        }
        const last = performance.now();
        expect(text).toContain('six');
        // At least the five later words' deltas and the closing events came after the first word.
        expect(last - firstWord, path).toBeGreaterThan(5 * 40 - 20);
      }
    } finally {
      await stub.close();
    }
  });

  it('holds answers until released, and answers unknown paths with 404', async () => {
    const stub = await startStubLlm();
    try {
      stub.hold();
      const pending = post('/v1/messages', { model: 'c', messages: user }, {}, stub.origin);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect([stub.calls.messages, stub.answered]).toEqual([1, 0]);
      stub.release();
      expect((await pending).status).toBe(200);
      expect(stub.answered).toBe(1);
      const unknown = await fetch(`${stub.url}/models`);
      expect(unknown.status).toBe(404);
      expect(stub.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/models', api: null });
    } finally {
      await stub.close();
    }
  });
});
