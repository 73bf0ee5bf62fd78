// The agent's controls for agent UIs that talk to this service only (issue 40): pause, resume and
// a confirmation's answer reach the conversation's agent server (the fake one records them), over
// REST and tRPC alike; a paused sandbox has nothing to pause and is resumed to run again; another
// user's conversation answers as missing, a bad answer 422, and nothing reaches the agent then; a
// sandbox's pause asks its agent server to prepare for it first.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let key: string;
let id: string;

beforeAll(async () => {
  app = await startConversationApp('agent-controls');
  key = await app.user('controller');
  const task = await app.startConversation(key);
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
}, 120_000);

afterAll(async () => {
  await app?.close();
});

/** What the fake agent server recorded of the conversation (its info: status and controls). */
async function agentSide(): Promise<{ execution_status: string; controls?: { control: string; body: unknown }[] }> {
  const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
  const agentUrl = conversation.conversation_url.replace(/\/api\/conversations\/.*$/, '');
  const [info] = (await (
    await fetch(`${agentUrl}/api/conversations?ids=${id}`, { headers: { 'x-session-api-key': conversation.session_api_key } })
  ).json()) as { execution_status: string; controls?: { control: string; body: unknown }[] }[];
  return info!;
}

const post = (suffix: string, body: unknown = {}, as = key) =>
  call(app, 'POST', `/api/v1/app-conversations/${id}/${suffix}`, { key: as, body });

describe("an agent's controls", () => {
  it('pauses and resumes the agent, and answers its confirmation, over REST', async () => {
    expect((await post('pause')).body).toEqual({ success: true });
    expect((await agentSide()).execution_status).toBe('paused');
    expect((await post('resume')).body).toEqual({ success: true });
    expect((await post('respond-to-confirmation', { accept: true })).status).toBe(200);
    expect((await post('respond-to-confirmation', { accept: false, reason: 'Not that file' })).status).toBe(200);
    expect((await agentSide()).controls).toEqual([
      { control: 'pause', body: null },
      { control: 'run', body: null },
      { control: 'events/respond_to_confirmation', body: { accept: true } },
      { control: 'events/respond_to_confirmation', body: { accept: false, reason: 'Not that file' } },
    ]);
  });

  it('takes the same calls over tRPC', async () => {
    const trpc = createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${app.url}/trpc`, transformer, headers: { authorization: `Bearer ${key}` } })],
    });
    const before = (await agentSide()).controls!.length;
    expect(await trpc.appConversationActions.pause.mutate({ conversation_id: id })).toEqual({ success: true });
    await trpc.appConversationActions.respondToConfirmation.mutate({ conversation_id: id, accept: false });
    expect((await agentSide()).controls!.slice(before)).toEqual([
      { control: 'pause', body: null },
      { control: 'events/respond_to_confirmation', body: { accept: false } },
    ]);
  });

  it("refuses another user's conversation and a bad answer before the agent", async () => {
    const before = (await agentSide()).controls!.length;
    const stranger = await app.user('stranger');
    for (const suffix of ['pause', 'resume', 'respond-to-confirmation']) {
      const res = await post(suffix, { accept: true }, stranger);
      expect(res.status, suffix).toBe(404);
    }
    expect((await post('respond-to-confirmation', { accept: 'yes' })).status).toBe(422);
    expect((await post('respond-to-confirmation', { accept: false, reason: 'x'.repeat(2001) })).status).toBe(422);
    expect((await agentSide()).controls!.length).toBe(before);
  });

  it('has nothing to pause in a paused sandbox, and resumes the sandbox to run the agent again', async () => {
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
    const sandboxId = conversation.sandbox_id as string;
    expect((await call(app, 'POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key, body: {} })).status).toBe(200);
    await eventually('the sandbox paused', async () => {
      const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body;
      return sandbox?.status === 'PAUSED';
    });
    expect((await post('pause')).body).toEqual({ success: true });
    expect((await post('resume')).body).toEqual({ success: true });
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body;
    expect(sandbox.status).toBe('RUNNING');
    // The fake's state lives in the sandbox's folder: what it recorded before the pause is still
    // there, and the pause let it hand its conversations over first (agent server 1.58).
    expect((await agentSide()).controls!.map((c) => c.control).slice(-3)).toEqual([
      'events/respond_to_confirmation',
      'prepare-for-sandbox-pause',
      'run',
    ]);
  });
});
