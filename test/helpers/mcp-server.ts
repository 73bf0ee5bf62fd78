// A real MCP server on 127.0.0.1 (the official TypeScript SDK's server and transports): streamable
// HTTP at /mcp (with sessions) behind a bearer key, HTTP+SSE at /sse behind an X-Api-Key header,
// and /hang, which takes the request and never answers. Its tools: echo (the text back) and
// whoami (the credential it was called with, so a test can see it masked in what reaches users).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface TestMcpServer {
  url: string;
  /** Every request's method, path and credential headers, in order. */
  seen: { method: string; path: string; authorization?: string; apiKey?: string }[];
  close(): Promise<void>;
}

function mcpServer(credential: () => string, toolNamedAfterKey: string | null): McpServer {
  const server = new McpServer({ name: 'loopback-test', version: '1.0.0' });
  // A server that puts the credential it was given where a user reads it back: a tool's name.
  if (toolNamedAfterKey) server.registerTool(`key-${toolNamedAfterKey}`, { description: 'Leaky' }, async () => ({ content: [] }));
  server.registerTool('echo', { description: 'Says the text back', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo: ${text}` }],
  }));
  server.registerTool('whoami', { description: 'The credential it was called with' }, async () => ({
    content: [{ type: 'text', text: `called with ${credential()}` }],
  }));
  return server;
}

async function bodyOf(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

export async function startMcpServer(
  keys: { bearer: string; apiKey: string },
  opts: { leakKeyInToolName?: boolean } = {},
): Promise<TestMcpServer> {
  const leaked = opts.leakKeyInToolName ? keys.bearer : null;
  const seen: TestMcpServer['seen'] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sseSessions = new Map<string, SSEServerTransport>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    seen.push({ method: req.method ?? '', path: url.pathname, authorization: header('authorization'), apiKey: header('x-api-key') });
    void (async () => {
      if (url.pathname === '/hang') {
        hanging.add(res);
        return;
      }
      if (url.pathname === '/mcp') {
        if (header('authorization') !== `Bearer ${keys.bearer}`) return void res.writeHead(401).end('{"error":"invalid token"}');
        const id = header('mcp-session-id');
        const body = req.method === 'POST' ? await bodyOf(req) : undefined;
        let transport = id ? sessions.get(id) : undefined;
        if (!transport) {
          if (id) return void res.writeHead(404).end();
          transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (sessionId) => void sessions.set(sessionId, transport!),
          });
          transport.onclose = () => transport?.sessionId && sessions.delete(transport.sessionId);
          await mcpServer(() => header('authorization') ?? '', leaked).connect(transport);
        }
        return void (await transport.handleRequest(req, res, body));
      }
      if (url.pathname === '/sse' && req.method === 'GET') {
        if (header('x-api-key') !== keys.apiKey) return void res.writeHead(401).end();
        const transport = new SSEServerTransport('/messages', res);
        sseSessions.set(transport.sessionId, transport);
        res.once('close', () => sseSessions.delete(transport.sessionId));
        return void (await mcpServer(() => header('x-api-key') ?? '', null).connect(transport));
      }
      if (url.pathname === '/messages' && req.method === 'POST') {
        const transport = sseSessions.get(url.searchParams.get('sessionId') ?? '');
        if (!transport || header('x-api-key') !== keys.apiKey) return void res.writeHead(401).end();
        return void (await transport.handlePostMessage(req, res, await bodyOf(req)));
      }
      res.writeHead(404).end();
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
