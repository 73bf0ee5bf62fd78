// Sandbox specs for tests: the fake agent server (a real process) and friends, written to a
// SANDBOX_SPECS_FILE. The first spec is the default.
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/processes.js';

/** What an isolated sandbox must see of this checkout to run the fixtures (src/sandbox/isolation/isolation.ts). */
export const FIXTURES_DIR = path.join(PACKAGE_ROOT, 'test/fixtures');

export const FAKE_AGENT_SPEC = {
  id: 'fake-agent',
  command: [process.execPath, path.join(FIXTURES_DIR, 'fake-agent-server.mjs'), '--port', '{port}'],
  working_dir: '{sandbox_dir}/workspace/project',
  read_only_paths: [FIXTURES_DIR],
};

/** A spec whose process never answers /alive. */
export const NEVER_HEALTHY_SPEC = { id: 'never-healthy', command: ['sleep', '600'] };

export function writeSpecsFile(dir: string, specs: object[]): string {
  const file = path.join(dir, 'specs.json');
  fs.writeFileSync(file, JSON.stringify(specs));
  return file;
}
