// Starts a sandbox of the default spec (the real OpenHands agent server) and waits until it is
// RUNNING (sandboxRunning, which waits for a sandbox of any spec). Where no Python >= 3.12 exists
// the start fails at once naming it: then this says so loudly and answers null, and the caller
// checks that nothing was left behind.
import { call, type TestApp } from './app.js';
import { eventually } from './eventually.js';

export interface RunningSandbox {
  id: string;
  agentUrl: string;
  sessionKey: string;
}

export async function startRealSandbox(app: TestApp, key: string, what: string): Promise<RunningSandbox | null> {
  const started = await call(app, 'POST', '/api/v1/sandboxes', { key });
  if (started.status === 503 && /Python >= 3\.12/.test(started.body.detail)) {
    console.warn(`\n${'!'.repeat(78)}\n!! ${what} NOT EXERCISED: ${started.body.detail}\n${'!'.repeat(78)}\n`);
    return null;
  }
  if (started.status !== 200) throw new Error(`sandbox start answered ${started.status}: ${JSON.stringify(started.body)}`);
  const id = started.body.id as string;
  const running = await sandboxRunning(app, key, id, 120_000);
  return { id, agentUrl: running.exposed_urls[0].url as string, sessionKey: started.body.session_api_key as string };
}

/** The sandbox's record once it is RUNNING; a start that ends in ERROR fails at once with its reason. */
export function sandboxRunning(app: Pick<TestApp, 'url'>, key: string, id: string, timeoutMs: number): Promise<any> {
  return eventually(
    `sandbox ${id} to run`,
    async () => {
      const info = (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
      if (info?.status === 'ERROR') throw new Error(`sandbox failed: ${info.status_reason}`);
      return info?.status === 'RUNNING' ? info : null;
    },
    timeoutMs,
  );
}
