// Today's TypeScript client, unchanged: npm @openhands/typescript-client, installed into the
// cache by scripts/setup-ts-client.sh (pinned there), loaded at run time (typed loosely here).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SETUP = fileURLToPath(new URL('../../scripts/setup-ts-client.sh', import.meta.url));

export interface TsClient {
  CloudClient: any;
  HttpError: new (...args: unknown[]) => Error;
}

export async function loadTsClient(): Promise<TsClient> {
  const dir = execFileSync('bash', [SETUP], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .trim()
    .split('\n')
    .pop()!;
  const dist = path.join(dir, 'node_modules/@openhands/typescript-client/dist');
  const { CloudClient } = await import(pathToFileURL(path.join(dist, 'clients.js')).href);
  const { HttpError } = await import(pathToFileURL(path.join(dist, 'index.js')).href);
  return { CloudClient, HttpError };
}
