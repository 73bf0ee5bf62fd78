// Transparent resume through the conversation routes and V0 start, over real HTTP with the
// fake agent server on the process runtime: a paused sandbox is resumed (once, however many
// routes ask at the same moment), a resume that cannot succeed answers the clear error at once
// (the per-user limit, a sandbox whose agent server keeps exiting, a workspace that is gone, a
// stop that comes in between), and another user's conversation resumes nothing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { PAGE_SPEC, SLOW_SPEC, startConversationApp, v0, type ConversationApp } from '../helpers/conversation-app.js';
import { FLAKY_AGENT_SPEC, metric, sandbox, waitForSandbox } from '../helpers/lifecycle.js';
import { writeSpecsFile } from '../helpers/specs.js';

const LIMIT = 2;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-conv-resume-'));
const dataDir = path.join(tmp, 'data');
let app: ConversationApp;

beforeAll(async () => {
  app = await startConversationApp('conv-resume', {
    DATA_DIR: dataDir,
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [PAGE_SPEC, SLOW_SPEC, FLAKY_AGENT_SPEC]),
    SANDBOX_MAX_RUNNING_PER_USER: String(LIMIT),
    SANDBOX_RESUME_BACKOFF_MS: '200',
  });
}, 60_000);

afterAll(async () => {
  await app.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const route = (id: string, suffix: string) => `/api/conversations/${id}/${suffix}`;
const resumes = (outcome: 'running' | 'failed') => metric(app, 'sandbox_resume_duration_seconds_count', { outcome });

/** A user's READY conversation whose sandbox (of the given spec) is paused, as the V1 web UI pauses it. */
async function pausedConversation(key: string, spec?: string) {
  let sandboxId: string | undefined;
  if (spec) {
    sandboxId = (await call(app, 'POST', `/api/v1/sandboxes?sandbox_spec_id=${spec}`, { key })).body.id as string;
    await waitForSandbox(app, key, sandboxId, 'RUNNING');
  }
  const task = await app.startConversation(key, sandboxId ? { sandbox_id: sandboxId } : {});
  expect(task.status, task.detail ?? '').toBe('READY');
  expect((await call(app, 'POST', `/api/v1/sandboxes/${task.sandbox_id}/pause`, { key })).status).toBe(200);
  expect((await sandbox(app, key, task.sandbox_id)).status).toBe('PAUSED');
  return { id: task.app_conversation_id, sandboxId: task.sandbox_id };
}

describe('a paused sandbox', () => {
  it('is resumed once when several routes ask for it at the same moment, and each answers', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key);
    const before = await resumes('running');

    const answers = await Promise.all(
      ['git/changes', 'list-files', 'microagents', 'git/changes'].map((suffix) => call(app, 'GET', route(id, suffix), { key })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers[1]!.body).toEqual([]); // the fake agent server's workspace holds nothing yet
    expect((await sandbox(app, key, sandboxId)).status).toBe('RUNNING');
    expect((await v0(app, key, id)).status).toBe('RUNNING');
    expect(await resumes('running')).toBe(before + 1);
  });

  it('is resumed by V0 start, which answers RUNNING once it runs', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key);
    const before = await resumes('running');
    expect(await call(app, 'POST', route(id, 'start'), { key, body: { providers_set: [] } })).toMatchObject({
      status: 200,
      body: { status: 'ok', conversation_id: id, message: null, conversation_status: 'RUNNING' },
    });
    expect((await sandbox(app, key, sandboxId)).status).toBe('RUNNING');
    expect(await resumes('running')).toBe(before + 1);
  });

  it("stays paused when another user calls its conversation's routes: 404, nothing resumed", async () => {
    const owner = await app.user('alice');
    const stranger = await app.user('mallory');
    const { id, sandboxId } = await pausedConversation(owner);
    const before = await resumes('running');
    for (const suffix of ['git/changes', 'list-files', 'microagents', 'git/diff?path=a', 'remember-prompt?event_id=0', 'trajectory']) {
      expect(await call(app, 'GET', route(id, suffix), { key: stranger })).toMatchObject({
        status: 404,
        body: { detail: `Conversation ${id} not found` },
      });
    }
    expect(await call(app, 'POST', route(id, 'start'), { key: stranger, body: {} })).toMatchObject({
      status: 404,
      body: { status: 'error', conversation_id: id },
    });
    const form = new FormData();
    form.append('files', new Blob(['x']), 'x.txt');
    const upload = await fetch(`${app.url}${route(id, 'upload-files')}`, {
      method: 'POST',
      headers: { 'x-session-api-key': stranger },
      body: form,
    });
    expect(upload.status).toBe(404);
    expect((await sandbox(app, owner, sandboxId)).status).toBe('PAUSED');
    expect(await resumes('running')).toBe(before);
  });
});

describe('a resume that cannot succeed', () => {
  it('answers 429 with Retry-After at once past the per-user limit, and resumes once a sandbox is freed', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key);
    const others: string[] = [];
    for (let i = 0; i < LIMIT; i++) others.push((await call(app, 'POST', '/api/v1/sandboxes', { key })).body.id as string);
    for (const other of others) await waitForSandbox(app, key, other, 'RUNNING');

    const began = Date.now();
    const refused = await call(app, 'GET', route(id, 'git/changes'), { key });
    expect(refused).toMatchObject({ status: 429, body: { error: `Sandbox limit reached (${LIMIT} running)` } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await call(app, 'POST', route(id, 'start'), { key, body: {} })).toMatchObject({
      status: 429,
      body: { status: 'error', conversation_id: id, message: `Failed to start conversation: Sandbox limit reached (${LIMIT} running)` },
    });
    expect(Date.now() - began).toBeLessThan(10_000); // refused, not retried
    expect((await sandbox(app, key, sandboxId)).status).toBe('PAUSED');

    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${others[0]}`, { key })).status).toBe(200);
    expect((await call(app, 'GET', route(id, 'git/changes'), { key })).status).toBe(200);
    expect((await sandbox(app, key, sandboxId)).status).toBe('RUNNING');
  });

  it('answers 503 with the reason when every attempt fails, and resumes once the cause is gone', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key, FLAKY_AGENT_SPEC.id);
    fs.writeFileSync(path.join(dataDir, 'sandboxes', sandboxId, 'fail-always'), '');
    const failedBefore = await resumes('failed');

    const began = Date.now();
    const failed = await call(app, 'GET', route(id, 'list-files'), { key });
    expect(failed.status).toBe(503);
    expect(failed.body.error).toMatch(
      new RegExp(`^Sandbox ${sandboxId} could not be resumed \\(3 attempts\\): The sandbox process exited \\(code 3\\)`),
    );
    expect(failed.headers.get('retry-after')).toBe('10');
    const start = await call(app, 'POST', route(id, 'start'), { key, body: {} });
    expect(start).toMatchObject({
      status: 503,
      body: {
        status: 'error',
        conversation_id: id,
        message: expect.stringMatching(/^Failed to start conversation: Sandbox .* could not be resumed/),
      },
    });
    expect(Date.now() - began).toBeLessThan(30_000); // an answer, not a hang
    expect(await resumes('failed')).toBe(failedBefore + 2);
    expect((await v0(app, key, id)).status).toBe('ERROR');

    fs.rmSync(path.join(dataDir, 'sandboxes', sandboxId, 'fail-always'));
    expect((await call(app, 'GET', route(id, 'list-files'), { key })).status).toBe(200);
    expect((await sandbox(app, key, sandboxId)).status).toBe('RUNNING');
  });

  it('answers 409 with the reason for a sandbox whose workspace is gone', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key);
    fs.rmSync(path.join(dataDir, 'sandboxes', sandboxId), { recursive: true, force: true });
    const why = `The sandbox of conversation ${id} cannot be resumed: The sandbox directory no longer exists`;
    expect(await call(app, 'GET', route(id, 'git/changes'), { key })).toMatchObject({ status: 409, body: { error: why } });
    expect(await call(app, 'POST', route(id, 'start'), { key, body: {} })).toMatchObject({
      status: 409,
      body: { status: 'error', conversation_id: id, message: `Failed to start conversation: ${why}` },
    });
    expect((await v0(app, key, id)).status).toBe('ARCHIVED');
  });

  it('gives way to a stop that comes while the sandbox resumes: 409, and the sandbox stays paused', async () => {
    const key = await app.user('alice');
    const { id, sandboxId } = await pausedConversation(key, SLOW_SPEC.id); // its agent server takes 2.5 s to answer
    const changes = call(app, 'GET', route(id, 'git/changes'), { key });
    await waitForSandbox(app, key, sandboxId, 'STARTING');
    expect((await call(app, 'POST', route(id, 'stop'), { key })).body).toMatchObject({
      message: 'Conversation stopped successfully',
      conversation_status: 'STARTING',
    });
    expect(await changes).toMatchObject({
      status: 409,
      body: { error: `Conversation ${id} was stopped while its sandbox was resuming` },
    });
    expect((await sandbox(app, key, sandboxId)).status).toBe('PAUSED');
  });
});
