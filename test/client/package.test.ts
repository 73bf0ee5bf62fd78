// The client package as a frontend installs it: packed by npm, installed in scratch projects.
// Next to @trpc/client and superjson only, its types check without any server package
// (skipLibCheck off), a wrong input is a type error, and its JavaScript talks to the service.
// The same holds on the lowest tRPC 11 release its peer range accepts, and beside
// @trpc/tanstack-react-query with the tRPC release that package pins (no --legacy-peer-deps).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartTaskStatusSchema } from '../../contract/app-conversations.schema.js';
import { WEBHOOK_EVENT_TYPES } from '../../contract/webhook-endpoints.schema.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { run } from '../helpers/build-cache.js';
import { CLIENT_DIR, ensureClientBuilt, packClient } from '../helpers/client-package.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const rootPackage = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const clientPeers = (
  JSON.parse(fs.readFileSync(path.join(CLIENT_DIR, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }
).peerDependencies;
const CLIENT_PEERS = ['@trpc/client', 'superjson'];
const TSC = path.join(PACKAGE_ROOT, 'node_modules/typescript/bin/tsc');
/** The newest @trpc/tanstack-react-query on the registry the tests use; it pins @trpc/client and @trpc/server exactly. */
const TANSTACK_REACT_QUERY = '11.22.1';
/** The lowest tRPC release the client's peer range accepts (`^11.4.0` → 11.4.0). */
const LOWEST_TRPC = /^\^(\d+\.\d+\.\d+)$/.exec(clientPeers['@trpc/client']!)?.[1];

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-client-scratch-'));
const scratch = path.join(root, 'pinned');
const lowest = path.join(root, 'lowest');
const tanstack = path.join(root, 'tanstack');
let app: TestApp;
let tanstackPins: Record<string, string>;

beforeAll(async () => {
  await ensureClientBuilt();
  const tarball = await packClient(root);
  const client = { '@agent-control-plane/client': `file:${tarball}` };
  const { stdout } = await run('npm', ['view', `@trpc/tanstack-react-query@${TANSTACK_REACT_QUERY}`, 'peerDependencies', '--json'], {
    cwd: root,
  });
  tanstackPins = JSON.parse(stdout) as Record<string, string>;
  // npm adds the peers' own peers (@trpc/server, and a TypeScript these tests do not use);
  // an unsatisfiable peer range fails the install (ERESOLVE), as in a frontend.
  await Promise.all([
    install(scratch, { ...client, ...Object.fromEntries(CLIENT_PEERS.map((name) => [name, rootPackage.dependencies[name]!])) }),
    install(lowest, {
      ...client,
      '@trpc/client': LOWEST_TRPC!,
      '@trpc/server': LOWEST_TRPC!,
      superjson: rootPackage.dependencies.superjson!,
    }),
    install(tanstack, {
      ...client,
      '@trpc/tanstack-react-query': TANSTACK_REACT_QUERY,
      '@trpc/client': tanstackPins['@trpc/client']!,
      '@trpc/server': tanstackPins['@trpc/server']!,
      '@tanstack/react-query': tanstackPins['@tanstack/react-query']!,
      superjson: rootPackage.dependencies.superjson!,
    }),
  ]);
  app = await startTestApp('client-package', {
    SANDBOX_SPECS_FILE: writeSpecsFile(root, [FAKE_AGENT_SPEC]),
    SANDBOX_MAX_RUNNING_PER_USER: '1',
  });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

async function install(dir: string, dependencies: Record<string, string>): Promise<void> {
  fs.mkdirSync(dir);
  writeJson(dir, 'package.json', { name: `scratch-${path.basename(dir)}`, private: true, type: 'module', dependencies });
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir });
}

function writeJson(dir: string, name: string, value: unknown) {
  fs.writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2));
}

/** What a browser project has (tRPC's own declarations use Disposable); no @types at all, skipLibCheck off. */
const STRICT_OPTIONS = {
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: false,
};

/** Type-checks one file of a scratch project with the repository's TypeScript; never throws. */
async function typeCheck(
  file: string,
  source: string,
  { dir = scratch, options = STRICT_OPTIONS }: { dir?: string; options?: Record<string, unknown> } = {},
): Promise<{ ok: boolean; output: string }> {
  fs.writeFileSync(path.join(dir, file), source);
  const tsconfig = `tsconfig.${file}.json`;
  writeJson(dir, tsconfig, { compilerOptions: options, files: [file] });
  try {
    const { stdout } = await run(process.execPath, [TSC, '-p', tsconfig], { cwd: dir });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: (error as Error).message };
  }
}

/** Runs a script in a scratch project against the test app as `userId`; its stdout parsed as JSON. */
async function runAgainstService(dir: string, userId: string, source: string, env: Record<string, string> = {}): Promise<any> {
  fs.writeFileSync(path.join(dir, 'run.mjs'), source);
  const { stdout } = await run(process.execPath, ['run.mjs'], {
    cwd: dir,
    env: { ...process.env, ...env, TRPC_URL: `${app.url}/trpc`, API_KEY: await app.keyFor(userId) },
  });
  return JSON.parse(stdout);
}

/** Every package installed in the scratch project (scoped ones as "@scope/name"). */
function installedPackages(): string[] {
  const modules = path.join(scratch, 'node_modules');
  return fs
    .readdirSync(modules)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => (name.startsWith('@') ? fs.readdirSync(path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name]));
}

const installedVersion = (dir: string, name: string) =>
  (JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

const GOOD_SOURCE = `
import {
  createClient, fieldErrorsOf, isAppClientError, retryAfterSecondsOf,
  type AppConversationStartTask, type RouterInputs, type RouterOutputs, type SandboxStatus, type SessionInfo, type Settings,
  type StartTaskStatus, type MetricsSnapshot, type BudgetStopReason, type UserBudget, type UpdateAppConversationInput, type WebhookDelivery, type WebhookEvent,
  type AgentEvent,
} from '@agent-control-plane/client';

const trpc = createClient({ url: 'http://localhost:3000/trpc', apiKey: 'ohk_x_y' });
const browser = createClient({ url: '/trpc', credentials: 'include' });

const update: RouterInputs['settings']['save'] = { llm_model: 'openai/gpt-4o', git_user_name: 'Ada', confirmation_mode: false };
await trpc.settings.save.mutate(update);
const settings: Settings = await trpc.settings.get.query({});
// An input whose fields are all optional may be left out.
const same: Settings = await trpc.settings.get.query();
const secretNames: string[] = (await browser.secrets.list.query()).custom_secrets.map((secret) => secret.name);
const sandbox = await trpc.sandboxes.start.mutate();
const firstPage: RouterOutputs['sandboxes']['search'] = await trpc.sandboxes.search.query();
const model: string | null = settings.llm_model;
const keySet: boolean = settings.llm_api_key_set;
const key: null = settings.llm_api_key; // write-only: never read back

const task: AppConversationStartTask = await browser.appConversations.start.mutate({
  selected_repository: 'acme/widgets',
  initial_message: { content: [{ type: 'text', text: 'Fix the tests' }] },
});
const subscription = browser.appConversations.watchStartTask.subscribe(
  { task_id: task.id },
  { onData: (snapshot) => { const status: StartTaskStatus = snapshot.status; console.log(status); } },
);
subscription.unsubscribe();
// A conversation's events, live and typed by kind.
const live = browser.events.watch.subscribe(
  { conversation_id: task.id },
  {
    onData: ({ id: position, data: event }: { id: string; data: AgentEvent }) => {
      if (event.kind === 'MessageEvent') console.log(position, event.llm_message.role);
      else if (event.kind === 'ActionEvent') console.log(event.tool_name, event.action?.kind);
      else if (event.kind === 'ObservationEvent') console.log(event.action_id, event.observation.kind);
    },
  },
);
live.unsubscribe();
const status = browser.appConversations.watch.subscribe(
  { conversation_id: task.id },
  { onData: (conversation) => { const title: string | null = conversation.title; console.log(title, conversation.execution_status); } },
);
status.unsubscribe();
const box = browser.sandboxes.watch.subscribe(
  { sandbox_id: 'sandbox-id' },
  { onData: (sandbox) => { const now: SandboxStatus = sandbox.status; console.log(now); } },
);
box.unsubscribe();
// What an agent UI does with a conversation: steer it, answer it, rename it, its files and changes.
const cid = task.app_conversation_id ?? task.id;
await browser.appConversationActions.sendMessage.mutate({ conversation_id: cid, content: [{ type: 'text', text: 'Go on' }] });
await browser.appConversationActions.pause.mutate({ conversation_id: cid });
await browser.appConversationActions.resume.mutate({ conversation_id: cid });
await browser.appConversationActions.respondToConfirmation.mutate({ conversation_id: cid, accept: false, reason: 'Not that file' });
const renamed: string | null = (await browser.appConversationActions.update.mutate({ conversation_id: cid, title: 'Tests' })).title;
await browser.conversationWorkspace.uploadFiles.mutate({ conversation_id: cid, files: [{ name: 'notes.txt', content_base64: 'aGk=' }] });
const exported: string = (await browser.appConversationFiles.download.query({ conversation_id: cid })).file_name;
const changed = await browser.appConversationFiles.gitChanges.query({ conversation_id: cid, path: '/workspace/project' });
const diff: string | null = (await browser.appConversationFiles.gitDiff.query({ conversation_id: cid, path: 'notes.txt' })).modified;
await browser.appConversationActions.delete.mutate({ conversation_id: cid });
console.log(renamed, exported, changed.length, diff);

// Budgets: a conversation's cost and why it was stopped; the caller's month; raising a budget.
const conversation = (await trpc.appConversations.search.query({})).items[0]!;
const cost: number | undefined = (conversation.metrics satisfies MetricsSnapshot | null)?.accumulated_cost;
const stoppedBecause: BudgetStopReason | null = conversation.execution_status_reason;
const month: UserBudget = await trpc.budgets.get.query();
const raise: UpdateAppConversationInput = { conversation_id: conversation.id, max_budget_per_task: 5 };
await trpc.appConversationActions.update.mutate(raise);
console.log(cost, stoppedBecause, month.month_cost);

const me: SessionInfo = await browser.auth.session.query({});
const signedInAs: string = me.user_id;
await browser.auth.signOut.mutate({});

const page: RouterOutputs['sandboxes']['search'] = await trpc.sandboxes.search.query({});
const statuses: SandboxStatus[] = page.items.map((sandbox) => sandbox.status);
await trpc.sandboxes.pause.mutate({ sandbox_id: page.items[0]!.id });

try {
  await trpc.secrets.create.mutate({ name: 'NPM_TOKEN', value: 'npm_x' });
} catch (error) {
  const byField: Record<string, string> = fieldErrorsOf(error);
  const wait: number | null = retryAfterSecondsOf(error);
  if (isAppClientError(error)) {
    const code: string | undefined = error.data?.code;
    const paths = error.data?.fieldErrors?.map((f) => f.path.join('.'));
    console.log(code, paths, byField, wait);
  }
}
// A receiver's body, after its signature was verified, narrowed by its type.
function describe(event: WebhookEvent): string {
  switch (event.type) {
    case 'start_task.status_changed': return event.data.status;
    case 'sandbox.paused': case 'sandbox.resumed': case 'sandbox.deleted': return event.data.status;
    case 'webhook.test': return event.data.endpoint_id;
    default: return \`\${event.data.id} \${event.data.execution_status ?? ''}\`;
  }
}
const endpoint = await trpc.webhookEndpoints.create.mutate({ url: 'https://hooks.example.com/in', event_types: ['conversation.budget_reached'] });
const delivery: WebhookDelivery = await trpc.webhookEndpoints.sendTest.mutate({ endpoint_id: endpoint.id });
console.log(describe(delivery.payload as unknown as WebhookEvent), endpoint.secret);
console.log(model, keySet, key, statuses, signedInAs, same, secretNames, sandbox.id, firstPage.items.length);
`;

describe('client package in a scratch project', () => {
  it('installs without any server package', () => {
    const installed = installedPackages();
    expect(installed).toEqual(expect.arrayContaining(['@agent-control-plane/client', '@trpc/client', '@trpc/server', 'superjson']));
    const serverPackages = Object.keys(rootPackage.dependencies).filter((name) => !CLIENT_PEERS.includes(name) && name !== '@trpc/server');
    expect(serverPackages).toEqual(
      expect.arrayContaining(['mongoose', 'express', '@kubernetes/client-node', 'pino', 'prom-client', 'zod']),
    );
    expect(installed.filter((name) => serverPackages.includes(name))).toEqual([]);
  });

  it.each([
    ['the pinned tRPC release', () => scratch],
    ['the lowest tRPC release of its peer range', () => lowest],
  ])('type-checks calls, subscriptions, named types and error helpers on %s', async (_release, dir) => {
    const result = await typeCheck('good.ts', GOOD_SOURCE, { dir: dir() });
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('fails to type-check a call with a wrong input field, naming it', async () => {
    const result = await typeCheck(
      'bad.ts',
      `import { createClient } from '@agent-control-plane/client';
const trpc = createClient({ url: 'http://localhost:3000/trpc', apiKey: 'ohk_x_y' });
await trpc.settings.save.mutate({ llm_modle: 'openai/gpt-4o' });
await trpc.sandboxes.pause.mutate({ sandboxId: 'abc' });
await trpc.settings.save.mutate({ confirmation_mode: 'yes' });
await trpc.webhooks.secrets.query({});
await trpc.secrets.create.mutate();
trpc.events.watch.subscribe({ conversationId: 'c' }, {});
await trpc.appConversationActions.respondToConfirmation.mutate({ conversation_id: 'c', accept: 'yes' });
`,
    );
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/bad\.ts\(3,\d+\): error TS\d+: .*'llm_modle' does not exist/);
    expect(result.output).toMatch(/bad\.ts\(4,\d+\): error TS\d+: .*'sandboxId' does not exist/);
    expect(result.output).toMatch(/bad\.ts\(5,\d+\): error TS\d+: Type 'string' is not assignable to type 'boolean/);
    // Agent-facing procedures are not part of a frontend's router.
    expect(result.output).toMatch(/bad\.ts\(6,\d+\): error TS\d+: Property 'webhooks' does not exist/);
    // Only inputs whose fields are all optional may be left out.
    expect(result.output).toMatch(/bad\.ts\(7,\d+\): error TS2554: Expected 1-2 arguments, but got 0/);
    // A subscription's wrong input (TypeScript reports it as no overload of subscribe matching).
    expect(result.output).toMatch(/bad\.ts\(8,\d+\): error TS2769/);
    expect(result.output).toMatch(/'conversationId' does not exist/);
    // An agent UI's answer to a confirmation is a boolean.
    expect(result.output).toMatch(/bad\.ts\(9,\d+\): error TS\d+: Type 'string' is not assignable to type 'boolean'/);
    expect(result.output.match(/error TS/g)).toHaveLength(7);
  });

  it("runs against the service from the packed package's JavaScript", async () => {
    const out = await runAgainstService(
      scratch,
      'scratch-user',
      `
import { createClient, fieldErrorsOf, retryAfterSecondsOf, isAppClientError, START_TASK_STEPS, WEBHOOK_EVENT_TYPES } from '@agent-control-plane/client';
const trpc = createClient({ url: process.env.TRPC_URL, apiKey: process.env.API_KEY });
const failure = (promise) => promise.then(() => null, (error) => error);
const out = { steps: START_TASK_STEPS, webhookEventTypes: WEBHOOK_EVENT_TYPES };
await trpc.settings.save.mutate({ llm_model: 'openai/gpt-4o', llm_api_key: 'sk-scratch', git_user_email: 'ada@example.com' });
out.settings = await trpc.settings.get.query({});
out.settingsWithoutInput = await trpc.settings.get.query();
out.secretsWithoutInput = await trpc.secrets.list.query();
const invalid = await failure(trpc.settings.save.mutate({ mcp_config: { stdio_servers: [{ name: 'bad name', command: 'x' }] } }));
out.invalid = { isAppError: isAppClientError(invalid), code: invalid?.data?.code, message: invalid?.message, fields: fieldErrorsOf(invalid) };
const first = await trpc.sandboxes.start.mutate({});
const limited = await failure(trpc.sandboxes.start.mutate({}));
out.limited = { code: limited?.data?.code, httpStatus: limited?.data?.httpStatus, retryAfterSeconds: retryAfterSecondsOf(limited), message: limited?.message };
await trpc.sandboxes.delete.mutate({ id: first.id });
const anonymous = await failure(createClient({ url: process.env.TRPC_URL }).settings.get.query({}));
out.anonymous = { code: anonymous?.data?.code, retryAfterSeconds: retryAfterSecondsOf(anonymous), fields: fieldErrorsOf(anonymous) };
console.log(JSON.stringify(out));
`,
    );
    expect(out.settings).toMatchObject({
      llm_model: 'openai/gpt-4o',
      llm_api_key: null,
      llm_api_key_set: true,
      git_user_email: 'ada@example.com',
    });
    expect(out.settingsWithoutInput).toEqual(out.settings);
    expect(out.secretsWithoutInput).toEqual({ custom_secrets: [] });
    expect(out.invalid).toEqual({
      isAppError: true,
      code: 'BAD_REQUEST',
      message: 'Invalid input: mcp_config.stdio_servers.0.name: Server name can only contain letters, numbers, hyphens, and underscores',
      fields: { 'mcp_config.stdio_servers.0.name': 'Server name can only contain letters, numbers, hyphens, and underscores' },
    });
    expect(out.limited).toEqual({
      code: 'TOO_MANY_REQUESTS',
      httpStatus: 429,
      retryAfterSeconds: 30,
      message: 'Sandbox limit reached (1 running)',
    });
    expect(out.steps).toEqual(StartTaskStatusSchema.options.filter((status) => status !== 'ERROR'));
    expect(out.webhookEventTypes).toEqual([...WEBHOOK_EVENT_TYPES]);
    expect(out.anonymous).toEqual({ code: 'UNAUTHORIZED', retryAfterSeconds: null, fields: {} });
  });
});

/** Calls a list query with no input, a save and a read; the same script on every tRPC release. */
const SMOKE_SOURCE = `
import { createClient } from '@agent-control-plane/client';
const trpc = createClient({ url: process.env.TRPC_URL, apiKey: process.env.API_KEY });
await trpc.secrets.create.mutate({ name: 'NPM_TOKEN', value: 'npm_x' });
await trpc.settings.save.mutate({ llm_model: 'openai/gpt-4o' });
const out = {
  secrets: await trpc.secrets.list.query(),
  model: (await trpc.settings.get.query()).llm_model,
  sandboxes: (await trpc.sandboxes.search.query()).items,
};
if (process.env.WITH_TANSTACK) {
  const { QueryClient } = await import('@tanstack/react-query');
  const { createTRPCOptionsProxy } = await import('@trpc/tanstack-react-query');
  const queryClient = new QueryClient();
  const options = createTRPCOptionsProxy({ client: trpc, queryClient });
  out.viaQueryClient = await queryClient.fetchQuery(options.secrets.list.queryOptions());
}
console.log(JSON.stringify(out));
`;

describe('client package on the lowest tRPC release its peers accept', () => {
  it('installs that release', () => {
    expect(LOWEST_TRPC).toMatch(/^11\./);
    expect(clientPeers['@trpc/server']).toBe(clientPeers['@trpc/client']);
    expect([installedVersion(lowest, '@trpc/client'), installedVersion(lowest, '@trpc/server')]).toEqual([LOWEST_TRPC, LOWEST_TRPC]);
  });

  it('calls the service, a list query without input included', async () => {
    expect(await runAgainstService(lowest, 'lowest-user', SMOKE_SOURCE)).toEqual({
      secrets: { custom_secrets: [{ name: 'NPM_TOKEN', description: '' }] },
      model: 'openai/gpt-4o',
      sandboxes: [],
    });
  });
});

describe('client package beside @trpc/tanstack-react-query', () => {
  // As create-next-app writes it: skipLibCheck on (tRPC's own declarations of some releases,
  // 11.22.1 among them, name node's http and ws, whose types a browser project may not have).
  const NEXT_OPTIONS = {
    target: 'ES2017',
    lib: ['dom', 'dom.iterable', 'esnext'],
    strict: true,
    skipLibCheck: true,
    module: 'esnext',
    moduleResolution: 'bundler',
    isolatedModules: true,
    jsx: 'preserve',
    noEmit: true,
    types: [],
  };

  it('installs with the tRPC release that package pins, without --legacy-peer-deps', () => {
    expect(tanstackPins['@trpc/client']).toMatch(/^11\.\d+\.\d+$/);
    expect(installedVersion(tanstack, '@trpc/tanstack-react-query')).toBe(TANSTACK_REACT_QUERY);
    expect(installedVersion(tanstack, '@trpc/client')).toBe(tanstackPins['@trpc/client']);
    expect(installedVersion(tanstack, '@trpc/server')).toBe(tanstackPins['@trpc/server']);
  });

  it('type-checks calls through the client and through the query options proxy, list queries without input', async () => {
    const result = await typeCheck(
      'query.ts',
      `import { createClient, type AppRouter, type Settings } from '@agent-control-plane/client';
import { QueryClient } from '@tanstack/react-query';
import { createTRPCOptionsProxy } from '@trpc/tanstack-react-query';

const trpc = createClient({ url: '/trpc', credentials: 'include' });
const queryClient = new QueryClient();
const options = createTRPCOptionsProxy<AppRouter>({ client: trpc, queryClient });

const names: string[] = (await trpc.secrets.list.query()).custom_secrets.map((secret) => secret.name);
const cached = await queryClient.fetchQuery(options.secrets.list.queryOptions());
const settings: Settings = await queryClient.fetchQuery(options.settings.get.queryOptions());
const key = options.sandboxes.search.queryKey();
console.log(names, cached.custom_secrets.length, settings.llm_model, key);
`,
      { dir: tanstack, options: NEXT_OPTIONS },
    );
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('calls the service through both', async () => {
    const out = await runAgainstService(tanstack, 'tanstack-user', SMOKE_SOURCE, { WITH_TANSTACK: '1' });
    expect(out).toEqual({
      secrets: { custom_secrets: [{ name: 'NPM_TOKEN', description: '' }] },
      model: 'openai/gpt-4o',
      sandboxes: [],
      viaQueryClient: { custom_secrets: [{ name: 'NPM_TOKEN', description: '' }] },
    });
  });
});
