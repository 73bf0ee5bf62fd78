// A stub OpenAI-compatible LLM on 127.0.0.1: POST /v1/chat/completions answers a fixed reply,
// as one JSON body or, with "stream": true, as server-sent chunks. Tests point an agent's LLM
// base URL here so a conversation runs end to end without a real provider, key or cost, and
// can assert exactly what was sent (headers such as the API key, model, messages).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubLlm {
  /** OpenAI-style base URL including /v1, e.g. http://127.0.0.1:1234/v1. */
  url: string;
  /** Every request, with lower-cased header names and the parsed JSON body (raw text when not JSON). */
  requests: { headers: Record<string, string>; body: unknown }[];
  /** Changes the assistant reply for later requests. */
  setReply(text: string): void;
  close(): Promise<void>;
}

const DEFAULT_REPLY = 'Hello from the stub LLM.';

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function startStubLlm(opts: { reply?: string } = {}): Promise<StubLlm> {
  let reply = opts.reply ?? DEFAULT_REPLY;
  const requests: StubLlm['requests'] = [];

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

      const path = (req.url ?? '').split('?')[0];
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        return json(res, 404, { error: { message: `Unknown request: ${req.method} ${path}`, type: 'invalid_request_error' } });
      }
      if (typeof body !== 'object' || body === null) {
        return json(res, 400, { error: { message: 'Request body must be a JSON object', type: 'invalid_request_error' } });
      }
      const request = body as { model?: unknown; stream?: unknown };
      const model = typeof request.model === 'string' ? request.model : 'stub-model';
      const created = Math.floor(Date.now() / 1000);
      const usage = { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 };

      if (request.stream !== true) {
        return json(res, 200, {
          id: 'chatcmpl-stub',
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: reply } }],
          usage,
        });
      }

      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
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
      for (const piece of reply.match(/\S+\s*|\s+/g) ?? []) send({ content: piece }, null);
      send({}, 'stop', { usage });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setReply(text) {
      reply = text;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
