// Database outages against real processes: the service runs as a child process with its
// embedded FerretDB, which the test stalls (SIGSTOP) and kills (SIGKILL) while requests keep
// arriving. Every request must answer 503 with Retry-After within the configured bound
// (never a 500, never a hang, never the driver's text), and the service must heal by itself:
// the stalled server continues, the killed one is restarted by the service's supervisor.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isProcessAlive } from '../../src/processes.js';
import { call } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';

const BOUND_MS = 2_000;
// Time the service itself may add around the database bound (routing, JSON, a busy machine).
const OVERHEAD_MS = 1_500;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-outage-'));
let service: ServiceProcess;
let key: string;
const ferretRecord = () =>
  JSON.parse(fs.readFileSync(path.join(dataDir, 'ferretdb', 'server.json'), 'utf8')) as { pid: number; socket: string };
const ferretPid = () => ferretRecord().pid;

/**
 * Occupies the killed server's socket path with a folder, which a new server cannot replace,
 * until release() removes it.
 */
async function occupySocket(socket: string): Promise<{ release(): void }> {
  await eventually('the killed server to be gone', async () => !isProcessAlive(ferretPid()), 5_000);
  fs.rmSync(socket, { force: true });
  fs.mkdirSync(socket);
  return { release: () => fs.rmdirSync(socket) };
}
const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name);
  } catch {
    /* already gone */
  }
};

beforeAll(async () => {
  service = await startServiceProcess({ DATA_DIR: dataDir, DB_OPERATION_TIMEOUT_MS: String(BOUND_MS), START_TASK_POLL_MS: '200' });
  key = fs.readFileSync(path.join(dataDir, 'default-api-key'), 'utf8').trim();
  const saved = await call(service, 'POST', '/api/settings', { key, body: { llm_model: 'openai/outage-test' } });
  expect(saved.status).toBe(200);
}, 120_000);

afterAll(async () => {
  signal(ferretPid(), 'SIGCONT'); // never leave a stopped server behind a failed assertion
  await service?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  what: string;
  status: number;
  ms: number;
  text: string;
  retryAfter: string | null;
}

/** One round of requests over both transports, all at once, timed. */
async function round(): Promise<Answer[]> {
  const trpcInput = encodeURIComponent(JSON.stringify({ json: {} }));
  const requests: [string, () => Promise<Awaited<ReturnType<typeof call>>>][] = [
    ['GET /api/settings', () => call(service, 'GET', '/api/settings', { key })],
    ['POST /api/secrets', () => call(service, 'POST', '/api/secrets', { key, body: { name: `S${Math.random()}`, value: 'v' } })],
    ['GET /api/v1/sandboxes/search', () => call(service, 'GET', '/api/v1/sandboxes/search', { key })],
    ['POST /api/v1/app-conversations', () => call(service, 'POST', '/api/v1/app-conversations', { key, body: {} })],
    ['GET /api/conversations', () => call(service, 'GET', '/api/conversations', { key })],
    ['tRPC settings.get', () => call(service, 'GET', `/trpc/settings.get?input=${trpcInput}`, { key })],
    ['tRPC secrets.create', () => call(service, 'POST', '/trpc/secrets.create', { key, body: { json: { name: 'T', value: 'v' } } })],
  ];
  return Promise.all(
    requests.map(async ([what, send]) => {
      const started = Date.now();
      const res = await send();
      return { what, status: res.status, ms: Date.now() - started, text: res.text, retryAfter: res.headers.get('retry-after') };
    }),
  );
}

function expectOutageAnswers(answers: Answer[]): void {
  for (const a of answers) {
    expect(a.status, `${a.what}: ${a.text}`).toBe(503);
    expect(a.ms, a.what).toBeLessThan(BOUND_MS + OVERHEAD_MS);
    expect(a.retryAfter, a.what).toBe('5');
    expect(a.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|Mongo|Timed out/i);
    if (a.what.startsWith('tRPC')) {
      expect(JSON.parse(a.text).error.json.data).toMatchObject({ code: 'SERVICE_UNAVAILABLE', httpStatus: 503, retryAfterSeconds: 5 });
    } else {
      expect(JSON.parse(a.text)).toEqual({ detail: 'Database unavailable, retry shortly' });
    }
  }
}

const healthy = async () => (await call(service, 'GET', '/api/settings', { key })).status === 200;

describe('database outages (embedded FerretDB, real processes)', () => {
  it('answers 503 within the bound while the database is stalled, and heals when it continues', async () => {
    const pid = ferretPid();
    signal(pid, 'SIGSTOP');
    try {
      // Several rounds: the first meets open connections, later ones a pool the driver gave up on.
      for (let i = 0; i < 3; i++) expectOutageAnswers(await round());
      const ready = await call(service, 'GET', '/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ status: 'not ready', checks: { database: false } });
      expect((await call(service, 'GET', '/alive')).status).toBe(200);
    } finally {
      signal(pid, 'SIGCONT');
    }
    await eventually('the service to heal after the stall', healthy, 15_000);
    expect((await call(service, 'GET', '/ready')).status).toBe(200);
    expect(ferretPid()).toBe(pid); // the same server: nothing was restarted
  });

  it('restarts a killed database on the same socket and data, answering 503 until it is back', async () => {
    const { pid, socket } = ferretRecord();
    signal(pid, 'SIGKILL');
    // Something occupies the socket path for a while, so the outage outlasts the bound and
    // the supervisor's first restarts fail and back off.
    const squatter = await occupySocket(socket);
    try {
      for (let i = 0; i < 2; i++) expectOutageAnswers(await round());
      expect((await call(service, 'GET', '/ready')).status).toBe(503);
    } finally {
      squatter.release();
    }
    await eventually('the supervisor to restart FerretDB', async () => ferretRecord().pid !== pid, 20_000);
    await eventually('the service to heal after the restart', healthy, 15_000);
    expect(ferretRecord().socket).toBe(socket);
    // Same data directory: what was stored before the crash is still there.
    expect((await call(service, 'GET', '/api/settings', { key })).body.llm_model).toBe('openai/outage-test');
    expect((await call(service, 'GET', '/ready')).status).toBe(200);
    // Log lines are written in batches (src/logger.ts): wait for the batch with the restart.
    await eventually('the restart to be logged', async () => service.stdout().includes('embedded FerretDB restarted'), 5_000);
    expect(service.stdout()).toContain('restarting the embedded FerretDB failed');
  });

  it('keeps the start-task runner working after the outages', async () => {
    const started = await call(service, 'POST', '/api/v1/app-conversations', { key, body: {} });
    expect(started.status).toBe(200);
    const done = await eventually(
      'the task to finish',
      async () => {
        const [task] = (await call(service, 'GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`, { key })).body;
        return task.status === 'ERROR' || task.status === 'READY' ? task : null;
      },
      20_000,
    );
    // No LLM key was saved: the runner took the task and ended it with the reason.
    expect(done).toMatchObject({ status: 'ERROR', detail: expect.stringContaining('LLM') });
  });

  it('never answered a 500 and never showed the driver to a client', () => {
    const statuses = service
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'))
      .map((l) => (JSON.parse(l) as { status: number }).status);
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
  });
});
