// Starts the reference OpenHands app server for the bench: installs it into the cache when
// missing (scripts/setup-reference-server.sh), then runs bench/reference-server.py (no rate
// limiter, throw-away data, no network) and waits for its ready line.
//
//   npx tsx bench/reference-server.ts [port]   # smoke check: settings POST + GET, a burst, stop
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ReferenceServer {
  url: string;
  child: ChildProcess;
  /** The settings path of this version (openhands-ai 1.11.0 has no /api/settings). */
  settingsPath: string;
  stop(): Promise<void>;
}

/** The venv's python, or an Error whose message says why (exit 3: no Python 3.12/3.13). */
export async function referenceServerPython(): Promise<string> {
  const { code, stdout, stderr } = await run('bash', [`${ROOT}scripts/setup-reference-server.sh`]);
  const python = stdout.trim().split('\n').pop();
  if (code !== 0 || !python)
    throw new Error(`setup-reference-server.sh exited ${code}:\n${stderr.trim().split('\n').slice(-8).join('\n')}`);
  return python;
}

export async function startReferenceServer(port: number, options: { sessionApiKey?: string } = {}): Promise<ReferenceServer> {
  const python = await referenceServerPython();
  const args = [`${ROOT}bench/reference-server.py`, '--port', String(port)];
  if (options.sessionApiKey) args.push('--session-api-key', options.sessionApiKey);
  const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reference server not ready after 120 s:\n${stderr}`)), 120_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      const ready = /reference-server: ready (\S+)/.exec(chunk.toString());
      if (ready) {
        clearTimeout(timer);
        resolve(ready[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`reference server exited (${code}) before it was ready:\n${stderr}`));
    });
  });
  return {
    url,
    child,
    settingsPath: '/api/v1/settings',
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

function run(command: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function smoke(port: number): Promise<void> {
  const server = await startReferenceServer(port);
  try {
    const settingsUrl = `${server.url}${server.settingsPath}`;
    const saved = await fetch(settingsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent_settings_diff: { llm: { model: 'openai/bench-smoke', api_key: 'sk-smoke' } } }),
    });
    const read = await fetch(settingsUrl);
    const body = (await read.json()) as { agent_settings?: { llm?: { model?: string } }; llm_api_key_set?: boolean };
    const burst = await Promise.all(Array.from({ length: 100 }, () => fetch(settingsUrl).then((r) => r.status)));
    const limited = burst.filter((status) => status === 429).length;
    console.log(
      `POST ${server.settingsPath} → ${saved.status}; GET → ${read.status}, model ${body.agent_settings?.llm?.model}, key set ${body.llm_api_key_set}`,
    );
    console.log(`100 concurrent GETs: ${burst.filter((s) => s === 200).length} × 200, ${limited} × 429`);
    const ok = saved.status === 200 && read.status === 200 && body.agent_settings?.llm?.model === 'openai/bench-smoke' && limited === 0;
    if (!ok) process.exitCode = 1;
  } finally {
    await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await smoke(Number(process.argv[2] ?? 3901));
}
