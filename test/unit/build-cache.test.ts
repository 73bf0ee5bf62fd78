// The shared build cache the slow test builds keep outside the checkout (test/helpers/build-cache.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharedBuild } from '../helpers/build-cache.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-build-cache-'));
const cacheDir = path.join(tmp, 'cache');

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A checkout whose "build" writes out/<n>.txt and a node_modules file, counting its runs. */
function checkout(name: string) {
  const root = path.join(tmp, name);
  fs.mkdirSync(root, { recursive: true });
  let runs = 0;
  const build = async () => {
    runs++;
    fs.mkdirSync(path.join(root, 'out'), { recursive: true });
    fs.writeFileSync(path.join(root, 'out', 'made.txt'), `made in ${name}`);
    fs.mkdirSync(path.join(root, 'node_modules', '.bin'), { recursive: true });
    fs.writeFileSync(path.join(root, 'node_modules', 'dep.js'), 'dep');
    fs.symlinkSync('../dep.js', path.join(root, 'node_modules', '.bin', 'dep'));
  };
  const make = (key: string) =>
    sharedBuild({ name: 'demo', key, root, entries: ['out', 'node_modules'], readOnly: ['node_modules'], build, cacheDir });
  return { root, make, runs: () => runs };
}

describe('sharedBuild', () => {
  it('builds once per key and copies the outputs into another checkout, links as links', async () => {
    const first = checkout('first');
    expect(await first.make('key-1')).toBe('built');
    const second = checkout('second');
    expect(await second.make('key-1')).toBe('restored');
    expect(second.runs()).toBe(0);
    expect(fs.readFileSync(path.join(second.root, 'out', 'made.txt'), 'utf8')).toBe('made in first');
    expect(fs.readlinkSync(path.join(second.root, 'node_modules', '.bin', 'dep'))).toBe('../dep.js');
    // Another key builds again.
    expect(await second.make('key-2')).toBe('built');
    expect(fs.readFileSync(path.join(second.root, 'out', 'made.txt'), 'utf8')).toBe('made in second');
  });

  it('keeps nothing of a failed build, and only the two newest builds of a name', async () => {
    const root = path.join(tmp, 'failing');
    fs.mkdirSync(root);
    const failing = sharedBuild({
      name: 'demo',
      key: 'key-3',
      root,
      entries: ['out'],
      build: () => Promise.reject(new Error('no')),
      cacheDir,
    });
    await expect(failing).rejects.toThrow('no');
    expect(fs.readdirSync(cacheDir).filter((e) => e.includes('partial'))).toEqual([]);
    const third = checkout('third');
    await third.make('key-4');
    expect(fs.readdirSync(cacheDir)).toHaveLength(2);
    expect(await checkout('fourth').make('key-1')).toBe('built'); // the oldest was pruned
  });
});
