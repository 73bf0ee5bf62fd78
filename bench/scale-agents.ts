// The agent servers of the simulated cluster's sandboxes, all in one: an HTTP server on a
// loopback address of its own at the agent port, which the replicas reach through the
// cluster DNS of bench/scale-dns.mjs. It answers what the conversation list asks a running
// sandbox (GET /api/conversations?ids=…: each conversation idle) and the warm pool's first
// command (POST /api/bash/start_bash_command, then its bash events: done at once, exit code 0),
// and counts the requests.
import crypto from 'node:crypto';
import http from 'node:http';
import { AGENT_PORT } from '../src/sandbox/kubernetes/kubernetes-objects.js';

export interface SimulatedAgents {
  address: string;
  requests: number;
  stop(): Promise<void>;
}

export async function startSimulatedAgents(): Promise<SimulatedAgents> {
  // A random address in 127/8, so concurrent runs on one machine do not collide on the port.
  const [a, b] = crypto.randomBytes(2);
  const address = `127.${(a! % 200) + 20}.${b}.1`;
  const agents: SimulatedAgents = { address, requests: 0, stop: async () => {} };
  const server = http.createServer((req, res) => {
    agents.requests++;
    const url = new URL(req.url ?? '/', 'http://agent');
    if (req.method === 'GET' && url.pathname === '/api/conversations') {
      const body = url.searchParams.getAll('ids').map((id) => ({ id, title: null, execution_status: 'idle' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } else if (req.method === 'POST' && url.pathname === '/api/bash/start_bash_command') {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: crypto.randomUUID() }));
    } else if (req.method === 'GET' && url.pathname === '/api/bash/bash_events/search') {
      const done = { order: 0, exit_code: 0, stdout: '', stderr: '' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [done], next_page_id: null }));
    } else if (url.pathname === '/alive') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
    }
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(AGENT_PORT, address, resolve));
  agents.stop = () => new Promise((resolve) => server.close(() => resolve()));
  return agents;
}
