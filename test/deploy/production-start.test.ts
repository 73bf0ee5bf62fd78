// What the container runs: the compiled service (`npm run build`, then the Dockerfile's CMD, read
// from the Dockerfile with its Node flags) in production mode, and its graceful shutdown on
// SIGTERM: in-flight requests complete, start-task leases are handed back, the process exits 0.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { call, testDatabaseUri, uniqueDbName } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { ensureServiceBuilt, runCli, startServiceProcess } from '../helpers/processes.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-prod-'));
const BUILD = path.join(PACKAGE_ROOT, 'scripts/build-if-changed.mjs');
let provider: FakeGitProvider;
let env: Record<string, string>;

beforeAll(async () => {
  await ensureServiceBuilt(); // npm start's build step
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_slow');
  const specsFile = path.join(tmp, 'specs.json');
  fs.writeFileSync(specsFile, JSON.stringify([{ id: 'never-healthy', command: ['sleep', '600'] }]));
  env = {
    NODE_ENV: 'production',
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('production')),
    ENCRYPTION_KEY: generateKeyText(),
    GITHUB_API_URL: provider.url,
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_STARTUP_TIMEOUT_MS: '600000',
    START_TASK_POLL_MS: '100',
  };
}, 120_000);

afterAll(async () => {
  await provider.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The Dockerfile's CMD as arguments of this machine's node: its flags, then the entry point. */
function containerArgs(): string[] {
  const cmd = /^CMD (\[.*\])$/m.exec(fs.readFileSync(path.join(PACKAGE_ROOT, 'Dockerfile'), 'utf8'))?.[1];
  if (!cmd) throw new Error('the Dockerfile has no CMD in exec form');
  const [node, ...args] = JSON.parse(cmd) as string[];
  expect(node).toBe('node');
  return args.map((arg) => (arg.startsWith('-') ? arg : path.join(PACKAGE_ROOT, arg)));
}

describe('the production build', () => {
  it("runs with npm start's Node flags (the ones the bench measures)", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    const [node, ...startArgs] = pkg.scripts.start.split(/\s+/);
    expect(node).toBe('node');
    const startFlags = startArgs.filter((arg) => arg.startsWith('-'));
    expect(startFlags.length).toBeGreaterThan(0);
    expect(containerArgs()).toEqual(expect.arrayContaining(startFlags));
    expect(containerArgs().at(-1)).toBe(path.join(PACKAGE_ROOT, startArgs.at(-1)!));
  });

  it('serves from dist/, finishes in-flight requests on SIGTERM, hands leases back and exits 0', { timeout: 120_000 }, async () => {
    const service = await startServiceProcess(env, 60_000, containerArgs());
    const key = (await runCli(['keys', 'create', '--user', 'ops'], env)).stdout.trim().split('\n').at(-1)!;
    const mongo = await new MongoClient(env.MONGODB_URI!).connect();
    try {
      expect((await call(service, 'GET', '/ready')).status).toBe(200);
      await call(service, 'POST', '/api/settings', { key, body: { llm_model: 'openai/x', llm_api_key: 'sk-x' } });
      const task = (await call(service, 'POST', '/api/v1/app-conversations', { key, body: {} })).body;
      await eventually('the task to wait for its sandbox', async () => {
        const t = await mongo.db().collection('start_tasks').findOne({ _id: task.id });
        return t?.status === 'WAITING_FOR_SANDBOX' && t.leaseOwner ? t : null;
      });

      provider.delayMs = 1500;
      const asked = provider.requests.length;
      const inFlight = call(service, 'POST', '/api/add-git-providers', {
        key,
        body: { provider_tokens: { github: { token: 'ghp_slow' } } },
      });
      await eventually('the token check to reach the provider', async () => provider.requests.length > asked);
      const exitCode = service.stop(); // SIGTERM while the request waits on the slow provider
      expect(await inFlight).toMatchObject({ status: 200, body: { message: 'Git providers stored' } });
      expect(await exitCode).toBe(0);
      await expect(fetch(`${service.url}/alive`)).rejects.toThrow();

      const handedBack = await mongo.db().collection('start_tasks').findOne({ _id: task.id });
      expect(handedBack).toMatchObject({ status: 'WAITING_FOR_SANDBOX', leaseOwner: null, leaseExpiresAt: null });
    } finally {
      provider.delayMs = 0;
      // The sandbox process outlives the service by design; remove it with the service's own runtime files.
      const restarted = await startServiceProcess(env, 60_000, containerArgs());
      for (const s of await mongo.db().collection('sandboxes').find({}).toArray()) {
        await call(restarted, 'DELETE', `/api/v1/sandboxes/${String(s._id)}`, { key });
      }
      await restarted.stop();
      await mongo.close();
      // The restarted service may have launched the handed-back task's sandbox again before its
      // stop; it outlives the service by design, so it goes with the test's data.
      for (const pid of processesNaming(env.DATA_DIR!)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
    }
  });
});

describe('the first minute', () => {
  it('compiles nothing when nothing changed since the last build', async () => {
    const entry = path.join(PACKAGE_ROOT, 'dist/src/main.js');
    const before = fs.statSync(entry).mtimeMs;
    const again = await promisify(execFile)(process.execPath, [BUILD], { cwd: PACKAGE_ROOT });
    expect(again.stderr).toBe('');
    expect(fs.statSync(entry).mtimeMs).toBe(before);
  });

  it('names every bad variable in one message and exits 1, without a stack trace, before starting anything', async () => {
    const dataDir = path.join(tmp, 'never-created');
    const result = await new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
      execFile(
        process.execPath,
        [path.join(PACKAGE_ROOT, 'dist/src/main.js')],
        {
          env: {
            PATH: process.env.PATH,
            DATA_DIR: dataDir,
            PORT: 'eighty',
            MONGODB_URI: 'mongodb://127.0.0.1:9/x',
            TRUSTED_ORIGINS: 'app.example.com',
          },
        },
        (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
      ),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^Invalid configuration:\n/);
    for (const name of ['PORT', 'TRUSTED_ORIGINS', 'ENCRYPTION_KEY']) expect(result.stderr).toContain(`  ${name}: `);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(fs.existsSync(dataDir)).toBe(false);
  });
});

/** Running processes whose command line names `text` (the test's data directory: its sandboxes and their networks). */
function processesNaming(text: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}
