// The one-command preparation of a workspace without a repository
// (src/conversations/start/workspace-scripts.ts), run by a real sh as an agent server runs it: the
// directory, a git repository trusted by git, the identity; a failed step says which.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyWorkspaceFailure, gitIdentity, prepareEmptyWorkspace } from '../../src/conversations/start/workspace-scripts.js';

const run = promisify(execFile);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-workspace-'));
// git's global config (safe.directory) goes to this test's own home.
const env = { ...process.env, HOME: root, GIT_CONFIG_NOSYSTEM: '1' };
const sh = (script: string) =>
  run('sh', ['-c', script], { env }).then(
    () => 0,
    (error: { code: number }) => error.code,
  );
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('an empty workspace in one command', () => {
  it("makes the directory, a git repository in it and the user's identity, again without harm", async () => {
    const dir = path.join(root, "it's here", 'workspace');
    const script = prepareEmptyWorkspace(dir, gitIdentity('Ada Lovelace', 'ada@example.com'));
    expect(await sh(script)).toBe(0);
    expect(await sh(script)).toBe(0); // a retried start
    const config = (key: string) => run('git', ['config', key], { cwd: dir, env }).then((r) => r.stdout.trim());
    expect(await config('user.name')).toBe('Ada Lovelace');
    expect(await config('user.email')).toBe('ada@example.com');
    expect(fs.existsSync(path.join(dir, '.git'))).toBe(true);
    expect(await sh(prepareEmptyWorkspace(path.join(root, 'bare'), null))).toBe(0);
  });

  it('says which step failed', async () => {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, '');
    const code = await sh(prepareEmptyWorkspace(path.join(file, 'workspace'), null));
    expect(code).toBe(101);
    expect(emptyWorkspaceFailure(code)).toBe('Could not create the working directory');
    const dir = path.join(root, 'no-identity');
    expect(emptyWorkspaceFailure(await sh(prepareEmptyWorkspace(dir, 'false')))).toBe('Could not set the git identity');
    expect(emptyWorkspaceFailure(7)).toBe('Could not prepare the workspace');
  });
});
