// A sandbox's agent server is a dependency the user controls: it may answer anything. With a
// running conversation, its (fake, real-process) agent server is switched to answering
// nonsense of one kind at a time ({"success": true} everywhere, HTML, JSON of the wrong shape,
// JSON labelled as text, nothing, a 500, a redirect). Every procedure that asks the agent
// server (derived from the routers: those that can fail with agent_server_failed) answers
// 502 naming the agent server, over REST and tRPC (except where the nonsense is that call's good
// answer: {"success": true} to a message, any bytes to a file read); every other conversation
// route answers without a 5xx; and the service never answers a 500 along the way.
import fs from 'node:fs';
import nodePath from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCEDURES, type ProcedureInfo } from '../../routers/index.js';
import { CONTRACT_ROUTES } from '../contract-routes.js';
import { call } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

const NONSENSE = ['success', 'html', 'wrong-json', 'json-as-text', 'empty', 'server-error', 'redirect'] as const;

let app: ConversationApp;
let alice: string;
let id: string;
let behave: (nonsense: string | null) => Promise<void>;
let workspace: string;

beforeAll(async () => {
  app = await startConversationApp('agent-nonsense', { SANDBOX_CALL_TIMEOUT_MS: '3000' });
  alice = await app.user('alice');
  const task = await app.startConversation(alice, { initial_message: { content: [{ type: 'text', text: 'Hello' }] } });
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
  workspace = app.server.deps.runtime.workingDir(task.sandbox_id, app.server.deps.services.sandboxSpecs.default);
  // remember-prompt reads stored events before it asks the agent: wait for the run's webhooks.
  await eventually('the events of the run to be stored', async () => {
    const count = await call(app, 'GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: alice });
    return count.body >= 3;
  });
  const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${task.sandbox_id}`, { key: alice })).body;
  behave = async (nonsense) => {
    const res = await fetch(`${sandbox.exposed_urls[0].url}/api/test/behaviour`, {
      method: 'POST',
      headers: { 'x-session-api-key': sandbox.session_api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ nonsense }),
    });
    expect(((await res.json()) as { nonsense: string | null }).nonsense).toBe(nonsense);
  };
}, 60_000);
afterAll(async () => {
  await app?.close();
});

/** The procedures that ask the agent server: the ones that can fail with agent_server_failed. */
const BACKED = [...PROCEDURES.values()].filter((p) => p.meta?.errors?.includes('agent_server_failed'));
/** Inputs beyond the conversation id, for the procedures that need them. */
const EXTRA: Record<string, Record<string, unknown>> = {
  'conversationWorkspace.gitDiff': { path: 'README.md' },
  'conversationWorkspace.rememberPrompt': { event_id: 2 },
  'conversationWorkspace.uploadFiles': { files: [{ name: 'note.txt', content_base64: Buffer.from('hi').toString('base64') }] },
  'appConversationActions.sendMessage': { content: [{ type: 'text', text: 'hi' }] },
  'appConversationActions.queueMessage': { content: [{ type: 'text', text: 'hi' }] },
  'appConversationActions.switchProfile': { profile_name: 'fast' },
  'appConversationActions.switchAcpModel': { model: 'claude-sonnet' },
  'appConversationActions.respondToConfirmation': { accept: true },
  'appConversationFiles.readFile': { file_path: 'README.md' },
  'appConversationFiles.gitChanges': { path: '/workspace/project' },
  'appConversationFiles.gitDiff': { path: '/workspace/project/README.md' },
};
/** Procedures whose agent-server call answers {"success": true} when it goes well: that nonsense is their good answer. */
const SUCCESS_IS_AN_ANSWER = new Set([
  'appConversationActions.sendMessage',
  'appConversationActions.queueMessage',
  'appConversationActions.switchAcpModel',
  'appConversationActions.pause',
  'appConversationActions.resume',
  'appConversationActions.respondToConfirmation',
]);
/** A file's bytes have no shape: only answers that are no file (an error, a redirect) are the agent server's failure. */
const ANY_BYTES = new Set(['appConversationFiles.readFile']);
/** What each procedure answers while the agent server behaves, where that is a refusal of its own. */
const OWN_ANSWER: Record<string, number> = {
  'appConversationActions.switchProfile': 404, // no LLM profiles are wired: the profile is unknown before the agent server is asked
  'appConversationActions.switchAcpModel': 400, // the agent server refuses it: no ACP agent runs here
};
/** The answer expected from a procedure for a kind of nonsense. */
function expectedUnder(kind: string, procedure: string): number {
  if (procedure === 'appConversationActions.switchProfile') return 404;
  if (kind === 'success' && SUCCESS_IS_AN_ANSWER.has(procedure)) return 200;
  if (ANY_BYTES.has(procedure) && !['server-error', 'redirect'].includes(kind)) return 200;
  return 502;
}

async function overRest(procedure: ProcedureInfo) {
  const { method, path } = procedure.meta!.openapi!;
  const url = path.replace('{conversation_id}', id);
  if (method === 'POST' && !procedure.meta!.openapi!.contentTypes) {
    const res = await call(app, method, url, { key: alice, body: EXTRA[procedure.path] ?? {} });
    return { status: res.status, text: res.text };
  }
  const extra = EXTRA[procedure.path] ?? {};
  if (procedure.meta!.openapi!.contentTypes?.includes('multipart/form-data')) {
    const form = new FormData();
    for (const file of extra.files as { name: string; content_base64: string }[]) {
      form.append('files', new Blob([Buffer.from(file.content_base64, 'base64')]), file.name);
    }
    const res = await fetch(app.url + url, { method, headers: { 'x-session-api-key': alice }, body: form });
    return { status: res.status, text: await res.text() };
  }
  const query = new URLSearchParams(Object.entries(extra).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const res = await call(app, method, `${url}${query ? `?${query}` : ''}`, { key: alice });
  return { status: res.status, text: res.text };
}

async function overTrpc(procedure: ProcedureInfo) {
  const input = JSON.stringify({ json: { conversation_id: id, ...EXTRA[procedure.path] } });
  const res =
    procedure.type === 'query'
      ? await call(app, 'GET', `/trpc/${procedure.path}?input=${encodeURIComponent(input)}`, { key: alice })
      : await call(app, 'POST', `/trpc/${procedure.path}`, { key: alice, rawBody: input, headers: { 'content-type': 'application/json' } });
  return { status: res.status, code: res.body?.error?.json?.data?.code, message: res.body?.error?.json?.message as string | undefined };
}

// The other conversation routes that read (live status, lists, single conversations): no 5xx.
const OTHER_READS = CONTRACT_ROUTES.filter((r) => /^GET \/api\/(conversations|v1\/app-conversations|microagent-management)/.test(r))
  .map((r) => r.slice('GET '.length))
  .filter((path) => !BACKED.some((p) => p.meta?.openapi?.path === path));
const READ_QUERY = () => `ids=${id}&selected_repository=acme%2Fwidgets&limit=20`;

describe('an agent server that answers nonsense', () => {
  it("is derived from the routers: the finding's routes are among them", () => {
    const paths = BACKED.map((p) => p.meta?.openapi?.path);
    for (const suffix of ['microagents', 'git/changes', 'trajectory'])
      expect(paths).toContain(`/api/conversations/{conversation_id}/${suffix}`);
    expect(BACKED.length).toBeGreaterThanOrEqual(7);
    expect(OTHER_READS.length).toBeGreaterThanOrEqual(8);
  });

  it('works while the agent server behaves (the table below is not an accident of the setup)', async () => {
    fs.writeFileSync(nodePath.join(workspace, 'README.md'), '# Widget\n');
    for (const procedure of BACKED) {
      const rest = await overRest(procedure);
      // git/diff of a file that is not in a repository is the route's own 404.
      const own = OWN_ANSWER[procedure.path];
      expect(own ? [own] : [200, 201, 404], `${procedure.path}: ${rest.text}`).toContain(rest.status);
    }
  });

  it.each(NONSENSE)(
    '%s: every agent-server route answers 502 naming the agent server, unless it is their good answer (REST and tRPC)',
    async (kind) => {
      await behave(kind);
      try {
        for (const procedure of BACKED) {
          const expected = expectedUnder(kind, procedure.path);
          const rest = await overRest(procedure);
          expect([expected, expected === 200 ? 201 : expected], `REST ${procedure.path}: ${rest.text}`).toContain(rest.status);
          if (expected !== 502) continue;
          expect(rest.text, procedure.path).toMatch(/"Agent server [^"]*"/);
          const trpc = await overTrpc(procedure);
          expect(trpc, `tRPC ${procedure.path}`).toMatchObject({
            status: 502,
            code: 'BAD_GATEWAY',
            message: expect.stringMatching(/^Agent server /),
          });
        }
        for (const path of OTHER_READS) {
          const res = await call(app, 'GET', `${path.replace('{conversation_id}', id)}?${READ_QUERY()}`, { key: alice });
          expect(res.status, `${path}: ${res.text}`).toBeLessThan(500);
        }
        const renamed = await call(app, 'PATCH', `/api/conversations/${id}`, { key: alice, body: { title: `renamed while ${kind}` } });
        expect(renamed.status).toBeLessThan(500);
      } finally {
        await behave(null);
      }
      expect((await call(app, 'GET', `/api/conversations/${id}/git/changes`, { key: alice })).status).toBe(200);
    },
  );

  it('never answered a 500 (the metrics count every answer)', async () => {
    const metrics = await (await fetch(`${app.url}/metrics`)).text();
    const fiveHundreds = metrics.split('\n').filter((line) => /^http_requests_total\{.*status="5\d\d"/.test(line));
    expect(fiveHundreds.filter((line) => !/status="50[23]"/.test(line))).toEqual([]);
  });
});
