// The client package (client/) as a frontend gets it: built into client/dist once per content
// of its inputs (the client's sources and the server's router types), and packed as npm would.
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { buildOnce, hashInputs, run, sharedBuild, TEST_BUILD_STATE } from './build-cache.js';

export const CLIENT_DIR = path.join(PACKAGE_ROOT, 'client');

/** Everything the client's JavaScript and declarations are made from. */
const CLIENT_INPUTS = ['client/src', 'client/scripts', 'client/package.json', 'client/tsconfig.json', 'tsconfig.json', 'package-lock.json'];
const SERVER_TYPE_INPUTS = ['contract', 'routers', 'src', 'models'];

/** Builds client/dist unless it is current; returns how long it took and whether it was reused. */
export async function ensureClientBuilt(): Promise<{ outcome: 'reused' | 'restored' | 'built'; ms: number }> {
  const started = Date.now();
  const key = hashInputs(PACKAGE_ROOT, [...CLIENT_INPUTS, ...SERVER_TYPE_INPUTS]);
  const outcome = await buildOnce({
    lockDir: path.join(TEST_BUILD_STATE, 'client.lock'),
    stampFile: path.join(TEST_BUILD_STATE, 'client.key'),
    key,
    output: path.join(CLIENT_DIR, 'dist', 'index.d.ts'),
    build: () =>
      sharedBuild({
        name: 'client-dist',
        key,
        root: CLIENT_DIR,
        entries: ['dist'],
        build: async () => {
          await run(process.execPath, [path.join(CLIENT_DIR, 'scripts/build.mjs')], { cwd: PACKAGE_ROOT });
        },
      }),
  });
  return { outcome, ms: Date.now() - started };
}

/** `npm pack` of the built client into `destination`; returns the tarball's path. */
export async function packClient(destination: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--pack-destination', destination, '--silent'], { cwd: CLIENT_DIR });
  const tarball = path.join(destination, stdout.trim().split('\n').pop()!);
  if (!fs.existsSync(tarball)) throw new Error(`npm pack wrote no ${tarball}`);
  return tarball;
}

/** Hash of the built client, for caches of things built on top of it (the example app). */
export function clientBuildKey(): string {
  return hashInputs(CLIENT_DIR, ['package.json', 'dist']);
}
