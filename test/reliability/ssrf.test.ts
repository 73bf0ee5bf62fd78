// SSRF, closed by default. An "internal service" listens on 127.0.0.1 and counts every
// connection; users try to make the service call it by naming it as their git provider host
// (directly, by a name that resolves to it, in other spellings, with a path), with tokens
// stored while an earlier configuration allowed it, and through a provider that redirects to
// it. It must never receive a connection. On a host the operator does allow, a closed port and
// an open one that is no provider answer alike, and nothing the upstream sent is echoed.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText, SecretBox } from '../../src/crypto.js';
import { freePort } from '../../src/processes.js';
import { tokenContext } from '../../src/git/git-providers.service.js';
import { CONTRACT_ROUTES } from '../contract-routes.js';
import { call, startTestApp, uniqueDbName, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

const INTERNAL_SECRET = 'internal-field-s3cr3t';

interface Listener {
  url: string;
  port: number;
  connections: number;
  requests: string[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that counts connections and answers `answer` to everything. */
async function listen(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Listener> {
  const server = http.createServer((req, res) => {
    state.requests.push(req.url ?? '');
    answer(req, res);
  });
  const state = { connections: 0, requests: [] as string[] };
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // the service keeps provider connections alive
      }),
  });
}

const json = (status: number, body: unknown) => (_req: http.IncomingMessage, res: http.ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

const encryptionKey = generateKeyText();
const box = SecretBox.fromStrings(encryptionKey);
const dbName = uniqueDbName('ssrf');
let internal: Listener; // what must never be reached
let redirector: Listener; // a provider root that redirects to it
let provider: FakeGitProvider;
let strict: TestApp; // the default rules
let earlier: TestApp; // the same database under an earlier, lenient configuration

beforeAll(async () => {
  internal = await listen(json(200, { id: 1, login: 'looks-like-a-user', secret: INTERNAL_SECRET }));
  redirector = await listen((req, res) => res.writeHead(302, { location: `${internal.url}${req.url}` }).end());
  provider = await startFakeGitProvider();
  const env = { ENCRYPTION_KEY: encryptionKey, GITHUB_API_URL: provider.url, GITLAB_API_URL: `${redirector.url}/api/v4` };
  // The configured API roots are the operator's: trusted even on 127.0.0.1 (the fakes live there).
  strict = await startTestApp('ssrf-strict', env, { dbName });
  earlier = await startTestApp('ssrf-earlier', { ...env, GIT_PROVIDER_HOSTS: '127.0.0.1' }, { dbName });
});
afterAll(async () => {
  await strict?.stop();
  await earlier?.stop();
  await Promise.all([internal?.close(), redirector?.close(), provider?.close()]);
});

const addToken = (app: TestApp, key: string, provider: string, token: string, host: string | null) =>
  call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { [provider]: { token, host } } } });

/** Writes a token as an older version stored it, past today's input checks. */
async function storeRaw(userId: string, provider: string, token: string, host: string | null) {
  await strict
    .rawCollection('settings')
    .updateOne(
      { userId },
      { $set: { providerTokens: { [provider]: { token: box.encrypt(token, tokenContext(userId, provider)), host, user_id: null } } } },
      { upsert: true },
    );
}

// Every /api/user/* route of the contract, with the parameters it needs.
const USER_ROUTES = CONTRACT_ROUTES.filter((r) => r.startsWith('GET /api/user/')).map((r) => r.slice('GET '.length));
const QUERY: Record<string, string> = {
  '/api/user/installations': '?provider=github',
  '/api/user/repositories': '?selected_provider=github&page=1&per_page=30',
  '/api/user/search/repositories': '?query=widgets&selected_provider=github',
  '/api/user/repository/branches': '?repository=acme%2Fwidgets',
  '/api/user/search/branches': '?repository=acme%2Fwidgets&query=x',
  '/api/user/repository/{repository_name}/microagents/content': '?file_path=.cursorrules',
};
const userRoutes = () => USER_ROUTES.map((r) => r.replace('{repository_name}', 'acme/widgets') + (QUERY[r] ?? ''));

describe('by default, no provider call reaches a loopback, private or metadata address', () => {
  it('refuses such hosts with 422 before anything is sent, in every spelling and by name', async () => {
    const key = await strict.keyFor('ssrf-direct');
    const p = internal.port;
    const hosts = [
      `http://127.0.0.1:${p}`,
      `127.0.0.1:${p}`,
      `http://localhost:${p}`, // a name: allowed as a name, refused by the address it resolves to
      `http://[::1]:${p}`,
      `http://[::ffff:127.0.0.1]:${p}`,
      `http://0.0.0.0:${p}`,
      `http://0x7f.1:${p}`,
      `http://2130706433:${p}`,
      `http://127.1:${p}`,
      '169.254.169.254',
      'http://[fd00:ec2::254]',
      '100.100.100.200',
      '10.0.0.1',
      '172.16.0.1',
      '192.168.1.1',
      'http://[fe80::1]',
    ];
    for (const host of hosts) {
      const res = await addToken(strict, key, 'github', 'ghp_any', host);
      expect(res.status, host).toBe(422);
      expect(res.body.detail[0].msg, host).toContain('is not allowed here');
    }
    expect(internal.connections).toBe(0);
    expect((await call(strict, 'GET', '/api/settings', { key })).status).toBe(404); // nothing stored
  });

  it('takes a host as an origin only: a path, query, fragment or credentials is a 422, allowed host or not', async () => {
    const key = await earlier.keyFor('ssrf-origin');
    for (const host of [
      `${internal.url}/api/v3/user?x=1`,
      `${internal.url}/internal`,
      `${internal.url}?q`,
      `${internal.url}#f`,
      `http://user:pw@127.0.0.1:${internal.port}`,
      `127.0.0.1:${internal.port}\\@example.com`,
      `127.0.0.1%3A${internal.port}`,
      'ftp://127.0.0.1',
    ]) {
      const res = await addToken(earlier, key, 'github', 'ghp_any', host);
      expect(res.status, host).toBe(422);
      expect(res.body.detail[0].loc, host).toEqual(['body', 'provider_tokens', 'github', 'host']);
    }
    expect(internal.connections).toBe(0);
  });
});

describe('tokens stored before the rules changed obey the rules at call time', () => {
  let key: string;
  let rawKey: string;

  beforeAll(async () => {
    // Stored while 127.0.0.1 was allowed (its check reached the internal service once)...
    key = await earlier.keyFor('ssrf-stored');
    expect((await addToken(earlier, key, 'github', 'ghp_stored', internal.url)).status).toBe(200);
    // ...and one stored by an older version that took whole URLs.
    rawKey = await strict.keyFor('ssrf-stored-url');
    await storeRaw('ssrf-stored-url', 'github', 'ghp_stored', `${internal.url}/internal/admin?x=1`);
    internal.connections = 0;
    internal.requests.length = 0;
  });

  it('answers every /api/user/* route 403 (REST) and FORBIDDEN (tRPC) and sends nothing', async () => {
    expect(USER_ROUTES).toHaveLength(9);
    for (const k of [key, rawKey]) {
      for (const path of userRoutes()) {
        const res = await call(strict, 'GET', path, { key: k });
        expect(res.status, path).toBe(403);
        expect(res.body.error, path).toMatch(/^Git provider host .* is not allowed here \(GIT_PROVIDER_HOSTS\)$/);
      }
      const trpc = await call(strict, 'GET', `/trpc/user.info?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, { key: k });
      expect(trpc.body.error.json.data.code).toBe('FORBIDDEN');
    }
    expect(internal.connections).toBe(0);
  });

  it('never asks such a host whether a repository is readable or a pull request still open', async () => {
    const gitProviders = strict.server.deps.services.gitProviders;
    for (const user of ['ssrf-stored', 'ssrf-stored-url']) {
      expect(await gitProviders.repositoryAccess(user, 'acme/widgets', 'github')).toBeNull();
      expect(await gitProviders.pullRequestOpen(user, 'github', 'acme/widgets', 7)).toBe(true); // unknown counts as open
    }
    expect(internal.connections).toBe(0);
  });
});

describe('redirects are never followed', () => {
  it('a provider root that redirects to an internal address: 502, and the internal service sees nothing', async () => {
    const key = await strict.keyFor('ssrf-redirect');
    const before = redirector.requests.length;
    const added = await addToken(strict, key, 'gitlab', 'glpat-redirected', null);
    expect(added).toMatchObject({ status: 502, body: { error: 'Could not reach gitlab to validate the token' } });
    await storeRaw('ssrf-redirect', 'gitlab', 'glpat-redirected', null);
    for (const path of userRoutes().map((p) => p.replace('provider=github', 'provider=gitlab'))) {
      const res = await call(strict, 'GET', path, { key });
      // 502 (the provider answered a redirect), or 400 where GitLab has no such thing: never a 500.
      expect([400, 502], path).toContain(res.status);
      expect(res.text).not.toContain(INTERNAL_SECRET);
    }
    const gitProviders = strict.server.deps.services.gitProviders;
    expect(await gitProviders.pullRequestOpen('ssrf-redirect', 'gitlab', 'acme/widgets', 7)).toBe(true);
    // A start on its repository fails naming the redirect (no proof the token lacks access).
    await expect(gitProviders.repositoryAccess('ssrf-redirect', 'acme/widgets', 'gitlab')).rejects.toMatchObject({
      code: 'BAD_GATEWAY',
      message: 'gitlab answered with a redirect (not followed)',
    });
    expect(redirector.requests.length).toBeGreaterThan(before + 5); // the redirects were answered...
    expect(internal.connections).toBe(0); // ...and not one was followed
  });
});

describe('on a host the operator allows, the service is no port scanner', () => {
  const servers: Listener[] = [];
  const rawServers: net.Server[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    for (const socket of sockets) socket.destroy();
    await Promise.all(rawServers.map((s) => new Promise((r) => s.close(r))));
  });

  const sockets = new Set<net.Socket>();
  /** A TCP port that accepts and sends `bytes` (or nothing) and closes. */
  async function rawPort(bytes: string): Promise<number> {
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.end(bytes);
    });
    rawServers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it('answers a closed port and open ports that are no provider the same, echoing nothing', async () => {
    const open = await Promise.all([
      listen((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<html>${INTERNAL_SECRET}</html>`)),
      listen(json(200, { success: true, secret: INTERNAL_SECRET })),
      listen(json(200, [{ id: 1, login: INTERNAL_SECRET }])),
      listen(json(500, { detail: INTERNAL_SECRET })),
      listen(json(302, { detail: INTERNAL_SECRET })),
    ]);
    servers.push(...open);
    const ports = [
      await freePort(), // closed
      ...open.map((s) => s.port),
      await rawPort(`garbage ${INTERNAL_SECRET}\r\n\r\n`),
      await rawPort(''),
    ];
    const key = await earlier.keyFor('ssrf-scan');
    const checks = [];
    const infos = [];
    for (const [i, port] of ports.entries()) {
      const host = `http://127.0.0.1:${port}`;
      const checked = await addToken(earlier, key, 'github', 'ghp_scan', host);
      checks.push({ status: checked.status, text: checked.text });
      const userId = `ssrf-scan-${i}`;
      const userKey = await earlier.keyFor(userId);
      await storeRaw(userId, 'github', 'ghp_scan', host);
      const info = await call(earlier, 'GET', '/api/user/info', { key: userKey });
      infos.push({ status: info.status, text: info.text });
    }
    expect(checks).toEqual(ports.map(() => ({ status: 502, text: '{"error":"Could not reach github to validate the token"}' })));
    expect(infos).toEqual(ports.map(() => ({ status: 502, text: '{"error":"Could not reach github"}' })));
  });
});
