// The LLM gateway bench's provider (bench/llm-gateway.ts): a bare node:http server in a process
// of its own that answers OpenAI chat completions at any path ending in /chat/completions, as
// one JSON body or, with "stream": true, as server-sent events — a role chunk, three content
// chunks, the finish chunk, a last choices-less chunk with the usage when
// stream_options.include_usage asks (as OpenAI does), then [DONE]; each event is its own write,
// the next one after setImmediate (or --chunk-delay-ms), so the first arrives before the rest.
// It records nothing but a count (GET /stats), so it costs a few tens of microseconds a call and
// is never what the bench measures. Usage is the test stub's (test/helpers/stub-llm.ts
// STUB_USAGE: 11 prompt tokens, 3 of them cached, 7 completion tokens).
//
//   node bench/fake-llm.mjs [--port 0] [--chunk-delay-ms 0]   → prints "fake-llm: ready http://127.0.0.1:<port>"
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, 'chunk-delay-ms': { type: 'string', default: '0' } },
});
const chunkDelayMs = Number(values['chunk-delay-ms']);
const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 3 } };
const WORDS = ['Hello', ' from', ' the fake provider.'];
let calls = 0;
let streamed = 0;

const next = chunkDelayMs > 0 ? () => new Promise((r) => setTimeout(r, chunkDelayMs)) : () => new Promise((r) => setImmediate(r));

function answerJson(res, model, id) {
  const text = JSON.stringify({
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join('') }, logprobs: null, finish_reason: 'stop' }],
    usage: USAGE,
  });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

async function answerStream(res, model, id, withUsage) {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices, extra = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
  const delta = (d, finish = null) => [{ index: 0, delta: d, logprobs: null, finish_reason: finish }];
  const events = [
    chunk(delta({ role: 'assistant', content: '' })),
    ...WORDS.map((w) => chunk(delta({ content: w }))),
    chunk(delta({}, 'stop')),
    ...(withUsage ? [chunk([], { usage: USAGE })] : []),
    'data: [DONE]\n\n',
  ];
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let i = 0; i < events.length; i++) {
    if (i > 0) await next();
    if (res.destroyed) return;
    res.write(events[i]);
  }
  res.end();
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    const text = JSON.stringify({ calls, streamed });
    return res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  }
  if (req.method === 'GET' && req.url === '/alive') return res.writeHead(200, { 'content-length': 2 }).end('ok');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || !req.url.split('?')[0].endsWith('/chat/completions')) {
      return res.writeHead(404, { 'content-type': 'application/json', 'content-length': 2 }).end('{}');
    }
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return res.writeHead(400, { 'content-type': 'application/json', 'content-length': 2 }).end('{}');
    }
    calls++;
    const id = `chatcmpl-${calls}`;
    const model = typeof body.model === 'string' ? body.model : 'unknown';
    if (body.stream === true) {
      streamed++;
      void answerStream(res, model, id, body.stream_options?.include_usage === true);
    } else answerJson(res, model, id);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`fake-llm: ready http://127.0.0.1:${server.address().port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => process.exit(0));
