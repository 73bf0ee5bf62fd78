// The real npm @openhands/typescript-client 1.39.0 (installed into the cache: helpers/ts-client.ts)
// drives the service through its CloudClient conversation and sandbox methods exactly
// as Agent Canvas and scripts do (Bearer key, its own paths and parsing); each step checks what
// the client hands its caller. The agent is the fake agent server in a process sandbox.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { loadTsClient } from '../helpers/ts-client.js';

const VERSION = '1.39.0';
let app: ConversationApp;
let client: any;
let HttpError: new (...args: unknown[]) => Error;

beforeAll(async () => {
  const loaded = await loadTsClient();
  HttpError = loaded.HttpError;
  const { CloudClient } = loaded;
  app = await startConversationApp('ts-client');
  client = new CloudClient({ host: app.url, apiKey: await app.user('canvas'), timeout: 30_000 });
}, 240_000);
afterAll(async () => {
  await app?.close();
});

/** The HttpError a client call throws (status and parsed body), or a failure when it resolves. */
async function refusal(promise: Promise<unknown>): Promise<{ status: number; response: unknown }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HttpError);
  return error as unknown as { status: number; response: unknown };
}

describe(`CloudClient (@openhands/typescript-client ${VERSION})`, () => {
  let taskId: string;
  let id: string;
  let sandboxId: string;

  it('createConversation answers the start task; getConversationStartTask follows it to READY', async () => {
    const task = await client.createConversation({ initial_message: { role: 'user', content: [{ type: 'text', text: 'Hello Canvas' }] } });
    expect(task).toMatchObject({ status: 'WORKING', id: expect.any(String) });
    taskId = task.id;
    const ready = await eventually('READY', async () => {
      const current = await client.getConversationStartTask(taskId);
      expect(current.status).not.toBe('ERROR');
      return current.status === 'READY' ? current : null;
    });
    id = ready.app_conversation_id;
    sandboxId = ready.sandbox_id;
    expect(await client.getConversationStartTask('0123456789abcdef0123456789abcdef')).toBeNull();
  });

  it('searchConversations (UPDATED_AT_DESC) and getConversations read the conversation with its 2026 fields', async () => {
    const page = await client.searchConversations(20);
    expect(page.items.map((c: { id: string }) => c.id)).toEqual([id]);
    expect(page.next_page_id).toBeNull();
    const [conversation, missing] = await client.getConversations([id, 'ffffffffffffffffffffffffffffffff']);
    expect(conversation).toMatchObject({ id, sandbox_id: sandboxId, sandbox_status: 'RUNNING', agent_kind: 'openhands', public: null });
    expect(missing).toBeNull();
  });

  it('readConversationFile gives the text; downloadConversation a zip Blob', async () => {
    const workspace = app.server.deps.runtime.workingDir(sandboxId, app.server.deps.services.sandboxSpecs.default);
    fs.writeFileSync(path.join(workspace, 'PLAN.md'), '# Plan\n1. Say hello\n');
    expect(await client.readConversationFile(id, '/workspace/project/PLAN.md')).toBe('# Plan\n1. Say hello\n');
    const blob = await client.downloadConversation(id);
    expect(blob.type).toBe('application/zip');
    const bytes = Buffer.from(await blob.arrayBuffer());
    expect(bytes.subarray(0, 2).toString()).toBe('PK');
    expect(bytes.includes(Buffer.from('meta.json'))).toBe(true);
  });

  it('updateConversationPublicFlag answers the conversation, shared', async () => {
    expect(await client.updateConversationPublicFlag(id, true)).toMatchObject({ id, public: true });
    expect((await client.getConversations([id]))[0].public).toBe(true);
  });

  it('switchConversationProfile and switchConversationAcpModel throw HttpErrors that say why', async () => {
    expect(await refusal(client.switchConversationProfile(id, 'fast'))).toMatchObject({
      status: 404,
      response: { detail: "Profile 'fast' not found" },
    });
    expect(await refusal(client.switchConversationAcpModel(id, 'claude-sonnet'))).toMatchObject({
      status: 400,
      response: { detail: expect.stringMatching(/^The agent server refused the model switch: .*only supported for ACP/) },
    });
  });

  it('getSandboxes, pauseSandbox and resumeSandbox', async () => {
    const [sandbox, missing] = await client.getSandboxes([sandboxId, 'nope']);
    expect(sandbox).toMatchObject({ id: sandboxId, status: 'RUNNING', session_api_key: expect.any(String) });
    expect(sandbox.exposed_urls.map((u: { name: string }) => u.name)).toContain('AGENT_SERVER');
    expect(missing).toBeNull();
    await client.pauseSandbox(sandboxId);
    expect((await client.getSandboxes([sandboxId]))[0].status).toBe('PAUSED');
    await client.resumeSandbox(sandboxId);
    await eventually('RUNNING again', async () => (await client.getSandboxes([sandboxId]))[0].status === 'RUNNING');
  });

  it('deleteConversation removes it (and its sandbox); a second delete is a 404 HttpError', async () => {
    await client.deleteConversation(id);
    expect(await client.getConversations([id])).toEqual([null]);
    expect(await client.getSandboxes([sandboxId])).toEqual([null]);
    expect(await refusal(client.deleteConversation(id))).toMatchObject({ status: 404, response: { detail: 'Conversation not found' } });
  });
});
