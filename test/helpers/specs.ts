// Sandbox specs for tests: the fake agent server (a real process) and friends, written to a
// SANDBOX_SPECS_FILE. The first spec is the default.
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/processes.js';

export const FAKE_AGENT_SPEC = {
  id: 'fake-agent',
  command: [process.execPath, path.join(PACKAGE_ROOT, 'test/fixtures/fake-agent-server.mjs'), '--port', '{port}'],
  working_dir: '{sandbox_dir}/workspace/project',
};

/** A spec whose process never answers /alive. */
export const NEVER_HEALTHY_SPEC = { id: 'never-healthy', command: ['sleep', '600'] };

export function writeSpecsFile(dir: string, specs: object[]): string {
  const file = path.join(dir, 'specs.json');
  fs.writeFileSync(file, JSON.stringify(specs));
  return file;
}
