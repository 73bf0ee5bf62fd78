// A scripted OpenAI-compatible LLM on 127.0.0.1 that drives an agent through one command: its
// first answer calls the terminal tool with `echo hello` (by the name the request's tools give it:
// `terminal`, or `execute_bash`/`bash` in older agent servers), and once the request carries that
// tool's result it calls finish with a final message. Stateless (it reads the conversation sent),
// so retries and several conversations at once get the same script. JSON or server-sent chunks.
// With `expectOutput`, a tool result without that text is answered by running the command again
// (at most three runs), as an agent would: agent server 1.0.0a6's terminal now and then reports its
// first command's output empty when its tmux shell starts slowly (it waits a fixed 0.1 s for it).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { allowForSandboxes } from './sandbox-host-ports.js';

export interface ToolCallLlm {
  /** OpenAI-style base URL including /v1. */
  url: string;
  readonly command: string;
  readonly finalMessage: string;
  /** How many completions were answered. */
  calls(): number;
  /** The system message of each request, as sent (the latest 50). */
  systemPrompts(): string[];
  /** The Authorization header of each request (the latest 50): the key the gateway swapped in. */
  authorizations(): string[];
  close(): Promise<void>;
}

interface ChatRequest {
  model?: string;
  stream?: boolean;
  messages?: { role?: string; content?: unknown }[];
  tools?: { function?: { name?: string; parameters?: JsonSchema } }[];
}

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
}

/**
 * finish's arguments: the message, and whatever else its schema requires filled in (an
 * automation run's finish carries a structured outcome: each enum's first value, the message as
 * every required text).
 */
function finishArguments(schema: JsonSchema | undefined, message: string): Record<string, unknown> {
  const fill = (node: JsonSchema | undefined, depth: number): unknown => {
    if (!node || depth > 5) return message;
    if (node.$ref) return fill(schema?.$defs?.[node.$ref.split('/').pop()!], depth + 1);
    if (node.anyOf)
      return fill(
        node.anyOf.find((n) => n.type !== 'null'),
        depth + 1,
      );
    if (node.enum) return node.enum[0];
    if (node.type === 'object' || node.properties)
      return Object.fromEntries((node.required ?? []).map((name) => [name, fill(node.properties?.[name], depth + 1)]));
    return node.type === 'string' || !node.type ? message : node.type === 'boolean' ? true : node.type === 'array' ? [] : 0;
  };
  return { ...(fill(schema, 0) as Record<string, unknown>), message };
}

export async function startToolCallLlm(
  opts: { command?: string; finalMessage?: string; expectOutput?: string } = {},
): Promise<ToolCallLlm> {
  const command = opts.command ?? 'echo hello';
  const finalMessage = opts.finalMessage ?? 'The command printed hello. Done.';
  let answered = 0;
  const systemPrompts: string[] = [];
  const authorizations: string[] = [];

  const commandDone = (request: ChatRequest) => {
    const results = (request.messages ?? []).filter((m) => m.role === 'tool');
    if (results.length === 0) return false;
    if (opts.expectOutput === undefined || results.length >= 3) return true;
    return JSON.stringify(results.at(-1)?.content ?? '').includes(opts.expectOutput);
  };
  const toolCall = (request: ChatRequest) => {
    const done = commandDone(request);
    const terminal = (request.tools ?? []).map((t) => t.function?.name ?? '').find((name) => /terminal|bash/.test(name)) ?? 'terminal';
    const id = `call_${done ? 'finish' : 'terminal'}_${answered}`;
    const finish = (request.tools ?? []).find((t) => t.function?.name === 'finish')?.function?.parameters;
    return done
      ? { id, type: 'function', function: { name: 'finish', arguments: JSON.stringify(finishArguments(finish, finalMessage)) } }
      : { id, type: 'function', function: { name: terminal, arguments: JSON.stringify({ command, is_input: false }) } };
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let request: ChatRequest;
      try {
        request = JSON.parse(Buffer.concat(chunks).toString()) as ChatRequest;
      } catch {
        return res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"not JSON"}}');
      }
      if (req.method !== 'POST' || !req.url?.startsWith('/v1/chat/completions')) {
        return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"unknown route"}}');
      }
      authorizations.push(req.headers.authorization ?? '') > 50 && authorizations.shift();
      const system = (request.messages ?? []).find((m) => m.role === 'system');
      if (system) systemPrompts.push(JSON.stringify(system.content)) > 50 && systemPrompts.shift();
      const call = toolCall(request);
      answered += 1;
      const base = { id: `chatcmpl-${answered}`, created: Math.floor(Date.now() / 1000), model: request.model ?? 'stub' };
      const usage = { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 };
      if (request.stream !== true) {
        const message = { role: 'assistant', content: null, tool_calls: [call] };
        const body = { ...base, object: 'chat.completion', choices: [{ index: 0, finish_reason: 'tool_calls', message }], usage };
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const send = (delta: unknown, finish: string | null, extra = {}) =>
        res.write(
          `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
        );
      send({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] }, null);
      send({}, 'tool_calls', { usage });
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const disallow = allowForSandboxes((server.address() as AddressInfo).port);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    command,
    finalMessage,
    calls: () => answered,
    systemPrompts: () => [...systemPrompts],
    authorizations: () => [...authorizations],
    async close() {
      disallow();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
