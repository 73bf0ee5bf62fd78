// The hostile-sandbox suite (hostile-sandbox.test.ts) with isolation switched off
// (SANDBOX_ISOLATION=none, the operator's single-user declaration) and the LLM gateway too
// (LLM_GATEWAY=off: agents get their owner's key): the same probe from Bob's shell now finds the
// holes the isolated run proves closed — the service's key, Alice's files, her agent server, the
// host's loopback listeners and database — and his squatter takes the service's port while it
// restarts; the key search finds Alice's LLM and MCP keys in her own sandbox. So the suite can fail. What
// holds in every mode holds here too: file routes stay in the workspace, and no key reaches the
// service's own files or log.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import {
  filesOutside,
  PROBE,
  searchKeys,
  SQUATTER,
  startRig,
  type Rig,
  type Started,
  expectFileRoutesRefused,
} from '../helpers/hostile-rig.js';
import { startServiceProcess } from '../helpers/processes.js';

let rig: Rig;
let alice: Started;
let bob: Started;
let bobProject: string;

beforeAll(async () => {
  rig = await startRig('hostile-none', { SANDBOX_ISOLATION: 'none', LLM_GATEWAY: 'off' });
  await rig.git.createRepo('bob', 'hostile', { 'tenant-probe.py': PROBE, 'port-squatter.py': SQUATTER });
  [alice, bob] = await Promise.all([
    rig.start(rig.alice.key),
    rig.start(rig.bob.key, { selected_repository: 'bob/hostile', git_provider: 'github' }),
  ]);
  bobProject = path.join(bob.dir, 'workspace/project/hostile');
}, 10 * 60_000);

afterAll(async () => rig?.close());

describe('a hostile sandbox without isolation (SANDBOX_ISOLATION=none)', () => {
  it(
    'finds the service’s key, Alice’s files and her agent server, the host’s listeners and its database',
    { timeout: 5 * 60_000 },
    async () => {
      const targets = JSON.stringify({
        ports: {
          alice_agent: Number(new URL(alice.agentUrl).port),
          service: rig.port,
          canary: rig.canaryPort,
          database: Number(new URL(inject('mongoUri')).port),
        },
        // Trying every listener of the host for MongoDB takes long; reaching the database's port says it.
        skip: ['mongo_tcp_ports'],
      });
      const shell = await rig.shell(bob, `/usr/bin/python3 tenant-probe.py '${rig.dataDir}' '${alice.dir}' '${targets}'`, bobProject);
      expect(shell.exitCode, shell.stderr).toBe(0);
      const probe = JSON.parse(shell.stdout) as Record<string, { ok: boolean; value?: any }>;
      expect(probe.encryption_key!.value).toBe(fs.readFileSync(path.join(rig.dataDir, 'encryption.key'), 'utf8'));
      expect(probe.other_sandbox_files!.ok).toBe(true);
      for (const name of ['alice_agent', 'service', 'canary', 'database']) expect(probe[`reach_${name}`], name).toMatchObject({ ok: true });
      expect(probe.listening_ports!.value).toContain(rig.canaryPort);
    },
  );

  it('finds Alice’s LLM and MCP keys in her own sandbox when her agent holds them (LLM_GATEWAY=off)', { timeout: 5 * 60_000 }, async () => {
    // Her folder, where her agent server keeps its state (the whole host is visible here: too
    // many files to walk in a test). The isolated suite's search finds neither with the gateway.
    const search = await searchKeys(rig, alice, { llm: rig.alice.llmKey, mcp: rig.alice.mcpKey }, [alice.dir]);
    expect(search.found.llm, JSON.stringify(search)).toContainEqual(expect.stringMatching(/base_state\.json$/));
    expect(search.found.mcp, JSON.stringify(search)).toContainEqual(expect.stringMatching(/base_state\.json$/));
  });

  it('takes the service’s port while it restarts', { timeout: 5 * 60_000 }, async () => {
    const out = path.join(bobProject, 'squatted');
    await rig.shell(bob, `setsid nohup /usr/bin/python3 port-squatter.py ${rig.port} '${out}' 60 >/dev/null 2>&1 &`, bobProject);
    await rig.service.stop();
    await eventually('the squatter to bind the service’s port', async () => fs.existsSync(`${out}.bound`));
    expect(fs.readFileSync(`${out}.bound`, 'utf8')).toBe('yes');
    // The service cannot listen again; a client that knocks meanwhile hands Bob its key.
    await expect(startServiceProcess({ DATA_DIR: rig.dataDir, PORT: String(rig.port), SANDBOX_ISOLATION: 'none' }, 60_000)).rejects.toThrow(
      /EADDRINUSE/,
    );
    await fetch(`http://127.0.0.1:${rig.port}/api/settings`, { headers: { authorization: `Bearer ${rig.alice.key}` } });
    await eventually('Bob to have the key', async () => fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes(rig.alice.key));
    // Bob's squatter goes (his process group, as the runtime would stop it), and the service comes back.
    for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      let cmdline = '';
      try {
        cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      if (cmdline.includes('port-squatter.py')) process.kill(Number(pid), 'SIGKILL');
    }
    await eventually('the port to be free', async () => (await fetch(`http://127.0.0.1:${rig.port}/`).catch(() => null)) === null);
    await rig.restart();
  });

  it('still refuses file routes that leave the workspace', async () => {
    await expectFileRoutesRefused(rig, rig.alice.key, alice.conversationId, ['../../../../encryption.key', '/etc/passwd']);
  });

  it('still keeps Alice’s keys out of the service’s own files and log', () => {
    for (const { file, text } of filesOutside(rig.dataDir, [alice.dir, bob.dir])) {
      for (const secret of [rig.alice.llmKey, rig.alice.mcpKey, rig.alice.secret, rig.alice.gitToken])
        expect(text, file).not.toContain(secret);
    }
    for (const secret of [rig.alice.llmKey, rig.alice.mcpKey, rig.alice.secret]) expect(rig.output()).not.toContain(secret);
  });
});
