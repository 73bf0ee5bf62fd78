// Every answer the service reads from an agent server is bounded in size and in time
// (src/agent-server/bounded-read.ts). The service runs as a child process, so its memory is
// its own (VmRSS and the peak VmHWM from /proc); its conversation's fake agent server (a real
// process) is switched to answering 300 MB with a Content-Length, 300 MB chunked, a 300 MB
// error, or an answer that starts and never finishes. The routes that read those answers say
// 502 naming the agent server, never its body (the file route 413: a file over its own 5 MB
// bound), a start whose conversation answer is oversized ends in ERROR without a started
// conversation recorded, the service's peak memory stays far below the 300 MB offered, and
// nothing along the way is a 500.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, testDatabaseUri, uniqueDbName } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/processes.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const KEY = `bounds-${generateKeyText().slice(0, 24)}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bounds-'));
let service: ServiceProcess;
let id: string;
let sandboxId: string;
let behave: (nonsense: string | null, only?: string) => Promise<void>;
/** The service's resident memory after its routes have all run once (MiB). */
let baseline: number;

/** The service process's resident memory now and at its peak so far, in MiB. */
function memory(): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${service.child.pid}/status`, 'utf8');
  const mib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) / 1024;
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

async function startTask(body: Record<string, unknown>) {
  const started = await call(service, 'POST', '/api/v1/app-conversations', { key: KEY, body });
  expect(started.status, started.text).toBe(200);
  return eventually('the start task to finish', async () => {
    const [task] = (await call(service, 'GET', `/api/v1/app-conversations/start-tasks?ids=${started.body.id}`, { key: KEY })).body;
    return ['READY', 'ERROR'].includes(task?.status) ? task : null;
  });
}

const ROUTES = {
  changes: () => `/api/conversations/${id}/git/changes`,
  trajectory: () => `/api/conversations/${id}/trajectory`,
  file: () => `/api/v1/app-conversations/${id}/file?file_path=notes.txt`,
};

async function ask(route: keyof typeof ROUTES) {
  const res = await call(service, 'GET', ROUTES[route](), { key: KEY });
  // The conversation page's routes answer {"error"}, the 2026 ones {"detail"} (docs/api.md); a
  // failure report shows the first 200 characters, not an echoed 300 MB.
  return { status: res.status, message: String(res.body?.error ?? res.body?.detail ?? res.text).slice(0, 200) };
}

beforeAll(async () => {
  service = await startServiceProcess({
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('agent-bounds')),
    ENCRYPTION_KEY: generateKeyText(),
    SESSION_API_KEY: KEY,
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    SANDBOX_CALL_TIMEOUT_MS: '4000',
    START_TASK_POLL_MS: '100',
  });
  const settings = { llm_model: 'openai/stub', llm_api_key: 'sk-bounds-test', llm_base_url: 'http://127.0.0.1:9/v1' };
  expect((await call(service, 'POST', '/api/settings', { key: KEY, body: settings })).status).toBe(200);
  const task = await startTask({});
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
  sandboxId = task.sandbox_id;
  const [sandbox] = (await call(service, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: KEY })).body;
  behave = async (nonsense, only) => {
    const res = await fetch(`${sandbox.exposed_urls[0].url}/api/test/behaviour`, {
      method: 'POST',
      headers: { 'x-session-api-key': sandbox.session_api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ nonsense, only }),
    });
    expect(((await res.json()) as { nonsense: string | null }).nonsense).toBe(nonsense);
  };
}, 120_000);

afterAll(async () => {
  if (service) {
    if (sandboxId) await call(service, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key: KEY });
    await service.stop();
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('an agent server whose answers are too large or never end', () => {
  it('is read as usual while it behaves (the failures below are the answers, not the setup)', async () => {
    const form = new FormData();
    form.append('files', new Blob(['hello\n']), 'notes.txt');
    const uploaded = await fetch(`${service.url}/api/conversations/${id}/upload-files`, {
      method: 'POST',
      headers: { 'x-session-api-key': KEY },
      body: form,
    });
    expect(uploaded.status).toBe(200);
    expect(await ask('changes')).toMatchObject({ status: 200 });
    expect(await ask('trajectory')).toMatchObject({ status: 200 });
    expect(await ask('file')).toEqual({ status: 200, message: 'hello\n' });
    baseline = memory().rss;
  });

  it.each([
    // kind, what the JSON routes say, what the file route (its own 5 MB bound) answers
    ['huge-length', /^Agent server answered GET \/api\/\S+ with more than 10 MB$/, [413, /larger than 5242880 bytes/]],
    ['huge-chunked', /^Agent server answered GET \/api\/\S+ with more than 10 MB$/, [413, /larger than 5242880 bytes/]],
    ['huge-error', /^Agent server answered 500 to GET \/api\/\S+$/, [502, /^Agent server answered 500 to GET \/api\/file\/download$/]],
    ['unfinished', /^Agent server did not finish its answer to GET \/api\/\S+ within 4 s$/, [502, /^Agent server did not finish/]],
  ] as const)(
    '%s: 502 naming the agent server (the file route: its own bound), never its body',
    async (kind, message, [fileStatus, fileMessage]) => {
      await behave(kind);
      try {
        for (const route of ['changes', 'trajectory'] as const) {
          const answer = await ask(route);
          expect(answer, route).toEqual({ status: 502, message: expect.stringMatching(message) });
        }
        const file = await ask('file');
        expect(file).toEqual({ status: fileStatus, message: expect.stringMatching(fileMessage) });
        expect(file.message).not.toContain('xxxx');
      } finally {
        await behave(null);
      }
      expect(await ask('changes')).toMatchObject({ status: 200 });
    },
  );

  it('ends a start whose conversation answer is oversized in ERROR, with no started conversation recorded', async () => {
    await behave('huge-chunked', 'POST /api/conversations');
    let task;
    try {
      task = await startTask({ sandbox_id: sandboxId });
    } finally {
      await behave(null);
    }
    expect(task).toMatchObject({ status: 'ERROR', detail: expect.stringMatching(/with more than 10 MB$/) });
    // The failed start's conversation is recorded as failed, not as started (no URL, model or
    // status from the agent server); the first one is as it was.
    const { items } = (await call(service, 'GET', '/api/v1/app-conversations/search', { key: KEY })).body;
    expect(items).toHaveLength(2);
    const failed = items.find((c: { id: string }) => c.id !== id);
    expect(failed).toMatchObject({ sandbox_status: 'ERROR', conversation_url: null, llm_model: null, execution_status: null });
    expect(items.find((c: { id: string }) => c.id === id)).toMatchObject({
      sandbox_status: 'RUNNING',
      conversation_url: expect.any(String),
    });
    // The first conversation is untouched.
    expect(await ask('file')).toEqual({ status: 200, message: 'hello\n' });
  });

  it('kept the service far below the 300 MB it was offered, at its peak', () => {
    const { rss, peak } = memory();
    expect(baseline).toBeGreaterThan(0);
    expect(peak - baseline, `baseline ${baseline.toFixed(0)} MiB, now ${rss.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB`).toBeLessThan(
      100,
    );
  });

  it('bounds a trajectory read page by page: pages each within the bound, together past 64 MB, are a 502', async () => {
    await behave('big-pages', 'GET /api/conversations/');
    try {
      expect(await ask('trajectory')).toEqual({
        status: 502,
        message: expect.stringMatching(/^Agent server answered events of more than 64 MB in all/),
      });
    } finally {
      await behave(null);
    }
  });

  it('never answered a 500 along the way (the metrics count every answer)', async () => {
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    const answers = metrics.split('\n').filter((line) => /^http_requests_total\{.*status="\d+"/.test(line));
    expect(answers.some((line) => line.includes('status="502"'))).toBe(true);
    expect(answers.filter((line) => line.includes('status="500"'))).toEqual([]);
  });
});
