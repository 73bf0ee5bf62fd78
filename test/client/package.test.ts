// The client package as a frontend installs it: packed by npm, installed in a scratch project
// next to @trpc/client and superjson only. Its types check there without any server package
// (skipLibCheck off), a wrong input is a type error, and its JavaScript talks to the service.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartTaskStatusSchema } from '../../contract/app-conversations.schema.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { run } from '../helpers/build-cache.js';
import { ensureClientBuilt, packClient } from '../helpers/client-package.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const rootPackage = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const CLIENT_PEERS = ['@trpc/client', 'superjson'];
const TSC = path.join(PACKAGE_ROOT, 'node_modules/typescript/bin/tsc');

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-client-scratch-'));
let app: TestApp;

beforeAll(async () => {
  await ensureClientBuilt();
  const tarball = await packClient(scratch);
  const dependencies: Record<string, string> = { '@agent-control-plane/client': `file:${tarball}` };
  for (const name of CLIENT_PEERS) dependencies[name] = rootPackage.dependencies[name]!;
  writeJson('package.json', { name: 'scratch-frontend', private: true, type: 'module', dependencies });
  // npm adds the peers' own peers (@trpc/server, and a TypeScript this test does not use).
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: scratch });
  app = await startTestApp('client-package', {
    SANDBOX_SPECS_FILE: writeSpecsFile(scratch, [FAKE_AGENT_SPEC]),
    SANDBOX_MAX_RUNNING_PER_USER: '1',
  });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function writeJson(name: string, value: unknown) {
  fs.writeFileSync(path.join(scratch, name), JSON.stringify(value, null, 2));
}

/** Type-checks one file of the scratch project with the repository's TypeScript; never throws. */
async function typeCheck(file: string, source: string): Promise<{ ok: boolean; output: string }> {
  fs.writeFileSync(path.join(scratch, file), source);
  const tsconfig = `tsconfig.${file}.json`;
  writeJson(tsconfig, {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      // What a browser project has (tRPC's own declarations use Disposable); no @types at all.
      lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
      types: [],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    },
    files: [file],
  });
  try {
    const { stdout } = await run(process.execPath, [TSC, '-p', tsconfig], { cwd: scratch });
    return { ok: true, output: stdout };
  } catch (error) {
    return { ok: false, output: (error as Error).message };
  }
}

/** Every package installed in the scratch project (scoped ones as "@scope/name"). */
function installedPackages(): string[] {
  const modules = path.join(scratch, 'node_modules');
  return fs
    .readdirSync(modules)
    .filter((name) => !name.startsWith('.'))
    .flatMap((name) => (name.startsWith('@') ? fs.readdirSync(path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name]));
}

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

  it('type-checks calls, subscriptions, named types and error helpers', async () => {
    const result = await typeCheck(
      'good.ts',
      `
import {
  createClient, fieldErrorsOf, isAppClientError, retryAfterSecondsOf,
  type AppConversationStartTask, type RouterInputs, type RouterOutputs, type SandboxStatus, type SessionInfo, type Settings,
  type StartTaskStatus,
} from '@agent-control-plane/client';

const trpc = createClient({ url: 'http://localhost:3000/trpc', apiKey: 'ohk_x_y' });
const browser = createClient({ url: '/trpc', credentials: 'include' });

const update: RouterInputs['settings']['save'] = { llm_model: 'openai/gpt-4o', git_user_name: 'Ada', confirmation_mode: false };
await trpc.settings.save.mutate(update);
const settings: Settings = await trpc.settings.get.query({});
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
console.log(model, keySet, key, statuses, signedInAs);
`,
    );
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
`,
    );
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/bad\.ts\(3,\d+\): error TS\d+: .*'llm_modle' does not exist/);
    expect(result.output).toMatch(/bad\.ts\(4,\d+\): error TS\d+: .*'sandboxId' does not exist/);
    expect(result.output).toMatch(/bad\.ts\(5,\d+\): error TS\d+: Type 'string' is not assignable to type 'boolean/);
    // Agent-facing procedures are not part of a frontend's router.
    expect(result.output).toMatch(/bad\.ts\(6,\d+\): error TS\d+: Property 'webhooks' does not exist/);
    expect(result.output.match(/error TS/g)).toHaveLength(4);
  });

  it("runs against the service from the packed package's JavaScript", async () => {
    const key = await app.keyFor('scratch-user');
    fs.writeFileSync(
      path.join(scratch, 'run.mjs'),
      `
import { createClient, fieldErrorsOf, retryAfterSecondsOf, isAppClientError, START_TASK_STEPS } from '@agent-control-plane/client';
const trpc = createClient({ url: process.env.TRPC_URL, apiKey: process.env.API_KEY });
const failure = (promise) => promise.then(() => null, (error) => error);
const out = { steps: START_TASK_STEPS };
await trpc.settings.save.mutate({ llm_model: 'openai/gpt-4o', llm_api_key: 'sk-scratch', git_user_email: 'ada@example.com' });
out.settings = await trpc.settings.get.query({});
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
    const { stdout } = await run(process.execPath, ['run.mjs'], {
      cwd: scratch,
      env: { ...process.env, TRPC_URL: `${app.url}/trpc`, API_KEY: key },
    });
    const out = JSON.parse(stdout);
    expect(out.settings).toMatchObject({
      llm_model: 'openai/gpt-4o',
      llm_api_key: null,
      llm_api_key_set: true,
      git_user_email: 'ada@example.com',
    });
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
    expect(out.anonymous).toEqual({ code: 'UNAUTHORIZED', retryAfterSeconds: null, fields: {} });
  });
});
