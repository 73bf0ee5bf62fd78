// Agent servers on the service's origin (src/http/agent-server-proxy.ts): deployed on a hostname
// (PUBLIC_URL off loopback), a process sandbox's AGENT_SERVER URL and its conversations' URLs
// point at /agent-servers/<id> on the service, and requests and sockets there reach the agent
// server (the fake one) with its session key only: never the service's cookie or key, never a
// cookie the sandbox sets, never another sandbox's. The service itself still calls the agent
// server directly (the conversation starts and runs).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startConversationApp, type ConversationApp, type StartedTask } from '../helpers/conversation-app.js';

const PUBLIC_URL = 'https://agents.example.test';
let app: ConversationApp;
let alice: string;
let bob: string;
let task: StartedTask;
let bobTask: StartedTask;

const sandboxOf = async (key: string, id: string) => (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
/** The service's own address for a URL it gives out under PUBLIC_URL (the test reaches it on loopback). */
const local = (url: string) => url.replace(PUBLIC_URL, app.url);

beforeAll(async () => {
  // A low per-IP limit: refused calls pay it (the last test).
  app = await startConversationApp('agent-server-proxy', { PUBLIC_URL, RATE_LIMIT_PER_IP: '30' });
  [alice, bob] = await Promise.all([app.user('alice'), app.user('bob')]);
  [task, bobTask] = await Promise.all([app.startConversation(alice), app.startConversation(bob)]);
});

afterAll(async () => app?.close());

/** One masked client text frame (RFC 6455 5.2), as a browser sends it. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = Buffer.from([1, 2, 3, 4]);
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ mask[i % 4]!)]);
}

/**
 * A WebSocket upgrade through the service, on a raw socket: the status, and the text frames'
 * JSON until `frames` came or the socket closed. `first`: a message sent once open.
 */
function openSocket(path: string, opts: { headers?: Record<string, string>; first?: string; frames?: number } = {}) {
  const { port } = new URL(app.url);
  return new Promise<{ status: number; frames: any[] }>((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        'Sec-WebSocket-Version: 13',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        ...Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let seen = Buffer.alloc(0);
    let status = 0;
    const frames: any[] = [];
    socket.on('close', () => resolve({ status, frames }));
    socket.on('data', (chunk) => {
      seen = Buffer.concat([seen, chunk]);
      if (!status) {
        const end = seen.indexOf('\r\n\r\n');
        if (end < 0) return;
        status = Number(/^HTTP\/1\.1 (\d+)/.exec(seen.toString('latin1'))![1]);
        seen = seen.subarray(end + 4);
        if (status !== 101) return void socket.destroy();
        if (opts.first !== undefined) socket.write(clientFrame(opts.first));
      }
      while (seen.length >= 2) {
        const [length, offset] = seen[1]! < 126 ? [seen[1]!, 2] : [seen.readUInt16BE(2), 4];
        if (seen.length < offset + length) return;
        frames.push(JSON.parse(seen.subarray(offset, offset + length).toString()));
        seen = seen.subarray(offset + length);
      }
      if (frames.length >= (opts.frames ?? 1)) socket.destroy();
    });
    socket.on('error', reject);
  });
}

describe('agent servers through the service, deployed on a hostname', () => {
  it('gives the AGENT_SERVER and conversation URLs on the service’s origin, and runs the conversation through its own address', async () => {
    expect(task.status, task.detail ?? '').toBe('READY');
    const sandbox = await sandboxOf(alice, task.sandbox_id);
    const urls = Object.fromEntries(sandbox.exposed_urls.map((u: { name: string; url: string }) => [u.name, u.url]));
    expect(urls.AGENT_SERVER).toBe(`${PUBLIC_URL}/agent-servers/${task.sandbox_id}`);
    // The other ports are not passed through (an app's absolute paths would break under a prefix).
    expect(urls.VSCODE).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${task.app_conversation_id}`, { key: alice })).body;
    expect(conversation.conversation_url).toBe(
      `${PUBLIC_URL}/agent-servers/${task.sandbox_id}/api/conversations/${task.app_conversation_id}`,
    );
    // The fake agent server ran the conversation and reported it: the service reached it directly.
    await eventually('the agent’s reply', async () => {
      const events = (await call(app, 'GET', `/api/v1/conversation/${task.app_conversation_id}/events/search?limit=50`, { key: alice }))
        .body;
      return events.items?.length >= 3;
    });
  });

  it('passes a call on with the session key only: not the service’s cookie or key, and no cookie back', async () => {
    const sandbox = await sandboxOf(alice, task.sandbox_id);
    const through = `${local(sandbox.exposed_urls[0].url)}/api/test/echo?x=1`;
    const answer = await fetch(through, {
      method: 'POST',
      headers: {
        'x-session-api-key': sandbox.session_api_key,
        authorization: `Bearer ${alice}`,
        cookie: 'acp_session=alice-session-cookie',
        'content-type': 'text/plain',
      },
      body: 'hello agent',
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      method: 'POST',
      path: '/api/test/echo',
      query: '?x=1',
      cookie: null,
      authorization: null,
      body: 'hello agent',
    });
    expect(answer.headers.get('set-cookie')).toBeNull();
    // What a sandbox serves cannot act as this origin in a browser.
    expect(answer.headers.get('content-security-policy')).toBe('sandbox');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('refuses a call without the sandbox’s key, with another sandbox’s key, or with the user’s own API key', async () => {
    const sandbox = await sandboxOf(alice, task.sandbox_id);
    const bobs = await sandboxOf(bob, bobTask.sandbox_id);
    const through = `${local(sandbox.exposed_urls[0].url)}/api/test/echo`;
    for (const key of [undefined, bobs.session_api_key, alice]) {
      const answer = await fetch(through, { headers: key ? { 'x-session-api-key': key } : {} });
      expect(answer.status).toBe(401);
      expect(await answer.json()).toEqual({ detail: 'The sandbox session key is missing or wrong' });
    }
    // An unknown sandbox reads as a wrong key; a malformed path is not found.
    const unknown = await fetch(`${app.url}/agent-servers/${'0'.repeat(32)}/api/test/echo`, {
      headers: { 'x-session-api-key': sandbox.session_api_key },
    });
    expect(unknown.status).toBe(401);
    expect((await fetch(`${app.url}/agent-servers/not-a-sandbox/alive`)).status).toBe(404);
  });

  it('joins a conversation’s socket with the key in its query or first message, without the service’s credentials', async () => {
    const sandbox = await sandboxOf(alice, task.sandbox_id);
    const path = `/agent-servers/${task.sandbox_id}/sockets/events/${task.app_conversation_id}`;
    const opened = await openSocket(`${path}?session_api_key=${encodeURIComponent(sandbox.session_api_key)}&resend_all=true`, {
      headers: { Cookie: 'acp_session=alice-session-cookie', Authorization: `Bearer ${alice}` },
    });
    const seen = { path: `/sockets/events/${task.app_conversation_id}`, cookie: null, authorization: null };
    expect(opened).toEqual({ status: 101, frames: [{ ...seen, auth: 'request' }] });
    // Agent Canvas sends the key as the socket's first message instead: checked here before
    // anything goes either way (this agent server sends a frame before the key: held until then).
    const auth = (key: string) => JSON.stringify({ type: 'auth', session_api_key: key });
    expect(await openSocket(`${path}?resend_all=true`, { first: auth(sandbox.session_api_key), frames: 2 })).toEqual({
      status: 101,
      frames: [
        { ...seen, auth: 'not yet' },
        { ...seen, auth: 'message' },
      ],
    });
    const bobs = await sandboxOf(bob, bobTask.sandbox_id);
    expect((await openSocket(`${path}?session_api_key=${encodeURIComponent(bobs.session_api_key)}`)).status).toBe(401);
    // Another sandbox's key, or anything else, as the first message: closed, nothing of the agent server's passed.
    expect(await openSocket(path, { first: auth(bobs.session_api_key) })).toEqual({ status: 101, frames: [] });
    expect(await openSocket(path, { first: 'not json' })).toEqual({ status: 101, frames: [] });
    expect((await openSocket('/api/v1/app-conversations')).status).toBe(404);
  });

  it('answers 503 while the sandbox is paused, and passes calls on again once resumed', async () => {
    const sandbox = await sandboxOf(bob, bobTask.sandbox_id);
    const through = `${local(sandbox.exposed_urls[0].url)}/api/test/echo`;
    const headers = { 'x-session-api-key': sandbox.session_api_key };
    expect((await call(app, 'POST', `/api/v1/sandboxes/${bobTask.sandbox_id}/pause`, { key: bob })).status).toBe(200);
    const paused = await fetch(through, { headers });
    expect(paused.status).toBe(503);
    expect(paused.headers.get('retry-after')).toBe('5');
    expect(await paused.json()).toEqual({ detail: 'The sandbox is not running' });
    expect((await call(app, 'POST', `/api/v1/sandboxes/${bobTask.sandbox_id}/resume`, { key: bob })).status).toBe(200);
    // A resume gives the sandbox a new session key (the one before no longer opens it).
    const resumed = await eventually('the sandbox running again', async () => {
      const info = await sandboxOf(bob, bobTask.sandbox_id);
      return info.status === 'RUNNING' ? info : null;
    });
    const again = await fetch(through, { headers: { 'x-session-api-key': resumed.session_api_key } });
    expect(again.status).toBe(200);
    expect((await fetch(through, { headers })).status).toBe(401);
  });

  it('charges refused calls to their address (429 past the per-IP limit); calls with the key pay nothing', async () => {
    const sandbox = await sandboxOf(alice, task.sandbox_id);
    const through = `${local(sandbox.exposed_urls[0].url)}/api/test/echo`;
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await fetch(through, { headers: { 'x-session-api-key': 'wrong' } })).status);
    expect(statuses).toContain(401);
    const limited = await fetch(through, { headers: { 'x-session-api-key': 'wrong' } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await fetch(through, { headers: { 'x-session-api-key': sandbox.session_api_key } })).status).toBe(200);
  });
});
