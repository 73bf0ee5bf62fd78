// The front door: the service started with no configuration at all runs its embedded
// FerretDB in DATA_DIR, mints the first key, survives a restart, and the CLI manages keys
// against the same data whether or not the service runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from './helpers/app.js';
import { eventually } from './helpers/eventually.js';
import { runCli, startServiceProcess, type ServiceProcess } from './helpers/processes.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-embedded-'));
const env = { DATA_DIR: dataDir };
let service: ServiceProcess | undefined;

afterAll(async () => {
  await service?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const lastLine = (text: string) => text.trim().split('\n').at(-1)!;

describe('embedded default (no MONGODB_URI, no keys configured)', () => {
  let firstKey: string;

  it('starts, prints the first key once and keeps it in an owner-only file', async () => {
    service = await startServiceProcess(env);
    const keyFile = path.join(dataDir, 'default-api-key');
    firstKey = fs.readFileSync(keyFile, 'utf8').trim();
    expect(firstKey).toMatch(/^ohk_/);
    expect(service.stdout()).toContain(firstKey);
    expect(service.stdout().split(firstKey)).toHaveLength(2); // exactly once
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dataDir, 'encryption.key')).mode & 0o777).toBe(0o600);
    expect(fs.existsSync(path.join(dataDir, 'ferretdb', 'server.json'))).toBe(true);

    expect((await call(service, 'GET', '/ready')).status).toBe(200);
    expect(
      (await call(service, 'POST', '/api/settings', { key: firstKey, body: { llm_model: 'persisted', llm_api_key: 'sk-embedded' } }))
        .status,
    ).toBe(200);
    // The structured log lines never carry the key.
    const logLines = service
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(logLines.join('\n')).not.toContain(firstKey);
    expect(logLines.join('\n')).not.toContain('sk-embedded');
  });

  it('lets the CLI mint, list and revoke keys while the service runs', async () => {
    const created = await runCli(['keys', 'create', '--user', 'bob'], env);
    expect(created.code).toBe(0);
    const bobKey = lastLine(created.stdout);
    expect(bobKey).toMatch(/^ohk_/);
    expect((await call(service!, 'GET', '/api/secrets', { key: bobKey })).status).toBe(200);

    const listed = await runCli(['keys', 'list', '--user', 'bob'], env);
    const keyId = listed.stdout.trim().split('\t')[0]!;
    expect(listed.stdout).toContain('\tbob\t');
    expect(listed.stdout).not.toContain(bobKey);

    expect((await runCli(['keys', 'revoke', keyId], env)).code).toBe(0);
    // The service verified this key a moment ago and trusts that for AUTH_CACHE_TTL_MS (5 s): the
    // revocation reaches it within that bound (test/rest/credential-cache.test.ts pins the bound itself).
    await eventually(
      'the revoked key to be refused',
      async () => (await call(service!, 'GET', '/api/secrets', { key: bobKey })).status === 401,
    );
    expect((await runCli(['keys', 'revoke', keyId], env)).code).toBe(1);
  });

  it('exits 0 on SIGTERM and stops its FerretDB', async () => {
    expect(await service!.stop()).toBe(0);
    service = undefined;
    expect(fs.existsSync(path.join(dataDir, 'ferretdb', 'server.json'))).toBe(false);
  });

  it('lets the CLI work while the service is stopped', async () => {
    const created = await runCli(['keys', 'create', '--user', 'carol'], env);
    expect(created.code).toBe(0);
    const listed = await runCli(['keys', 'list'], env);
    expect(listed.stdout).toContain('\tcarol\t');
    expect(listed.stdout).toContain('\tdefault\t');
  });

  it('keeps its data across a restart and mints no new key', async () => {
    service = await startServiceProcess(env);
    expect(service.stdout()).not.toContain('First start');
    const settings = await call(service, 'GET', '/api/settings', { key: firstKey });
    expect(settings.body).toMatchObject({ llm_model: 'persisted', llm_api_key_set: true });
  });
});

describe('SESSION_API_KEY (single-user mode)', () => {
  it('maps the configured key to user "default" and mints none', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-session-'));
    const single = await startServiceProcess({ DATA_DIR: dir, SESSION_API_KEY: 'configured-session-key' });
    try {
      expect(fs.existsSync(path.join(dir, 'default-api-key'))).toBe(false);
      expect((await call(single, 'POST', '/api/secrets', { key: 'configured-session-key', body: { name: 'S', value: 'v' } })).status).toBe(
        201,
      );
      expect((await call(single, 'GET', '/api/secrets', { key: 'configured-session-key-x' })).status).toBe(401);
    } finally {
      expect(await single.stop()).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
