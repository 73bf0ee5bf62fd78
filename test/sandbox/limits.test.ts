// Sandbox limits (src/sandbox/isolation/limits.ts), each mode forced in turn, with real processes:
// - cgroup v1, as this machine has it (the unified v2 hierarchy here has no controllers): a
//   process over its memory limit is killed and breach() names the memory limit, a fork loop
//   stops at pids.max and breach() names the process limit, the same work outside the cgroup
//   runs untouched, remove() leaves no folder;
// - resource limits: prlimit's address-space, process-count and file-size limits refuse the
//   same work that runs without them;
// - cgroup v2 only against a folder laid out like a cgroup2 hierarchy: the paths written and
//   the values, the processes moved to the leaf, the events read. Not a kernel test: no
//   limit is enforced there.
// Every cgroup made is removed in afterAll, also when a test fails.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { isProcessAlive } from '../../src/processes.js';
import { sandboxUid } from '../../src/sandbox/isolation/isolation.js';
import { detectLimitEnforcer, diskUsage, PRLIMIT, type LimitEnforcer, type SandboxCgroup } from '../../src/sandbox/isolation/limits.js';
import type { SandboxLimits } from '../../src/sandbox/runtime.js';

const MiB = 2 ** 20;
const LIMITS: SandboxLimits = { memoryBytes: 64 * MiB, cpus: 1.5, pids: 32, diskBytes: 10 * MiB };
const GROUP = `limits-test-${process.pid}`;
const PYTHON = '/usr/bin/python3';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-limits-'));
const logged: string[] = [];
const log = createLogger('info', { write: (line: string) => void logged.push(line) });

/** Allocates n MiB (filled, so the pages are really used) and says so. */
const allocate = (mib: number) => `chunks = [b"x" * (1 << 20) for _ in range(${mib})]\nprint("allocated", len(chunks))`;
/** Forks up to n sleepers (off our pipes), stops at the first refused fork, prints how many started and their pids. */
const forkSleepers = (n: number) =>
  [
    'import os',
    'pids = []',
    `for _ in range(${n}):`,
    '    try:',
    '        pid = os.fork()',
    '    except BlockingIOError:',
    '        break',
    '    if pid == 0:',
    '        null = os.open("/dev/null", os.O_RDWR)',
    '        for fd in (0, 1, 2):',
    '            os.dup2(null, fd)',
    '        os.execv("/bin/sleep", ["sleep", "600"])',
    '    pids.append(pid)',
    'print(len(pids), *pids)',
  ].join('\n');

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(command: string[], onSpawn?: (pid: number) => void): Promise<Outcome> {
  const child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], cwd: tmp });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (onSpawn) child.once('spawn', () => onSpawn(child.pid!));
  child.stdin.end();
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const made: SandboxCgroup[] = [];
const groupDirs = new Set<string>();
const stray: number[] = [];

afterAll(async () => {
  for (const pid of stray) if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
  for (const cgroup of made) await cgroup.remove().catch(() => undefined);
  for (const dir of groupDirs) if (fs.existsSync(dir)) fs.rmdirSync(dir);
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function create(enforcer: LimitEnforcer, sandboxId: string, limits = LIMITS): Promise<SandboxCgroup> {
  const cgroup = await enforcer.create(sandboxId, limits);
  expect(cgroup).not.toBeNull();
  made.push(cgroup!);
  for (const dir of cgroup!.dirs) groupDirs.add(path.dirname(dir));
  return cgroup!;
}

const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), 'utf8').trim();
const hasV1Memory = fs.readFileSync('/proc/self/mountinfo', 'utf8').includes(' - cgroup cgroup rw,memory');

describe.skipIf(!hasV1Memory || process.getuid?.() !== 0)('cgroup v1 (this machine)', async () => {
  const enforcer = await detectLimitEnforcer(log, { group: GROUP });
  // Made and removed at once: it names the group's folders for afterAll, whatever fails later.
  if (enforcer.kind === 'cgroup-v1') await (await create(enforcer, 'probe')).remove();

  it('is what detection picks here, writes the limits and removes the cgroup without a trace', async () => {
    expect(enforcer.kind).toBe('cgroup-v1');
    expect(enforcer.reason).toMatch(/cgroup v2: .*lacks the memory, pids, cpu controller/);
    const cgroup = await create(enforcer, 'files');
    const [memory, pids, cpu] = cgroup.dirs;
    expect(cgroup.dirs.map((d) => path.relative('/sys/fs/cgroup', d).split('/')[0])).toEqual(['memory', 'pids', 'cpu']);
    expect([read(memory!, 'memory.limit_in_bytes'), read(memory!, 'memory.memsw.limit_in_bytes')]).toEqual([`${64 * MiB}`, `${64 * MiB}`]);
    expect(read(pids!, 'pids.max')).toBe('32');
    expect([read(cpu!, 'cpu.cfs_quota_us'), read(cpu!, 'cpu.cfs_period_us')]).toEqual(['150000', '100000']);
    expect(cgroup.breach()).toBeNull();
    // No address-space or process-count rlimit beside a cgroup: only the file size and no core files.
    expect(enforcer.commandPrefix(LIMITS)).toEqual([PRLIMIT, `--fsize=${10 * MiB}`, '--core=0', '--']);

    expect(enforcer.find('files')?.dirs).toEqual(cgroup.dirs);
    expect(enforcer.find('never-made')).toBeNull();
    await cgroup.remove();
    for (const dir of cgroup.dirs) expect(fs.existsSync(dir)).toBe(false);
    await cgroup.remove(); // idempotent
    expect(enforcer.find('files')).toBeNull();
  });

  it('kills a process over the memory limit, and breach() says so; the same outside runs', async () => {
    const cgroup = await create(enforcer, 'memory');
    const inside = await run([...cgroup.enterPrefix(), PYTHON, '-c', allocate(128)]);
    expect([inside.signal, inside.stdout]).toEqual(['SIGKILL', '']);
    expect(cgroup.breach()).toBe('The sandbox reached its memory limit (64 MiB): a process was killed');

    const outside = await run([PYTHON, '-c', allocate(128)]);
    expect([outside.code, outside.stdout.trim()]).toEqual([0, 'allocated 128']);
    // Found again (a restarted service), it still knows.
    expect(enforcer.find('memory')?.breach()).toMatch(/memory limit \(64 MiB\)/);
    await cgroup.remove();
  });

  it('add() moves a running process in: what it does afterwards counts', async () => {
    const cgroup = await create(enforcer, 'added');
    const waiting = `import sys\nsys.stdin.readline()\n${allocate(128)}`;
    const child = spawn(PYTHON, ['-c', waiting], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.once('spawn', resolve));
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    cgroup.add(child.pid!);
    expect(fs.readFileSync(`/proc/${child.pid}/cgroup`, 'utf8')).toContain(`/${GROUP}/added`);
    child.stdin.end('go\n');
    expect(await ended).toBe('SIGKILL');
    expect(cgroup.breach()).toMatch(/^The sandbox reached its memory limit/);
    await cgroup.remove();
  });

  it('stops a fork loop at pids.max, breach() names the process limit, remove() ends what remains', async () => {
    const bystander = spawn('/bin/sleep', ['600'], { stdio: 'ignore' });
    stray.push(bystander.pid!);
    const cgroup = await create(enforcer, 'pids');
    const loop = await run([...cgroup.enterPrefix(), PYTHON, '-c', forkSleepers(60)]);
    const [started, ...sleepers] = loop.stdout.trim().split(' ').map(Number);
    stray.push(...sleepers);
    // The loop itself is one of the 32.
    expect([loop.code, started]).toEqual([0, 31]);
    expect(cgroup.breach()).toBe('The sandbox reached its process limit (32): a new process or thread was refused');
    expect(sleepers.every(isProcessAlive)).toBe(true);

    await cgroup.remove();
    expect(sleepers.filter(isProcessAlive)).toEqual([]);
    for (const dir of cgroup.dirs) expect(fs.existsSync(dir)).toBe(false);
    expect(isProcessAlive(bystander.pid!)).toBe(true);
    bystander.kill('SIGKILL');
  });
});

describe('resource limits only (no cgroups)', async () => {
  const enforcer = await detectLimitEnforcer(log, { cgroups: [] });
  const prefix = enforcer.commandPrefix({ ...LIMITS, memoryBytes: 256 * MiB });

  it('makes no cgroups and puts prlimit with every limit in front of the command', async () => {
    expect(enforcer.kind).toBe('rlimits');
    expect(await enforcer.create('any', LIMITS)).toBeNull();
    expect(enforcer.find('any')).toBeNull();
    expect(prefix).toEqual([PRLIMIT, `--as=${256 * MiB}`, '--nproc=32', `--fsize=${10 * MiB}`, '--core=0', '--']);
    expect(logged.some((line) => line.includes('resource limits only'))).toBe(true);
  });

  it('refuses an allocation past the address-space limit (MemoryError) that runs without it', async () => {
    const limited = await run([...prefix, PYTHON, '-c', allocate(512)]);
    expect([limited.code, limited.stderr]).toEqual([1, expect.stringContaining('MemoryError')]);
    expect((await run([PYTHON, '-c', allocate(512)])).stdout.trim()).toBe('allocated 512');
  });

  it('refuses a file larger than the disk limit: dd is killed by SIGXFSZ, Python gets EFBIG', async () => {
    const dd = ['/bin/dd', 'if=/dev/zero', `of=${path.join(tmp, 'big')}`, 'bs=1M', 'count=20', 'status=none'];
    expect((await run([...prefix, ...dd])).signal).toBe('SIGXFSZ');
    expect(fs.statSync(path.join(tmp, 'big')).size).toBe(10 * MiB);
    // Python ignores SIGXFSZ, so the write fails instead.
    const write = `open("${path.join(tmp, 'big-py')}", "wb").write(b"x" * (20 << 20))`;
    expect((await run([...prefix, PYTHON, '-c', write])).stderr).toMatch(/File too large/);
    expect((await run(dd)).code).toBe(0);
    expect(fs.statSync(path.join(tmp, 'big')).size).toBe(20 * MiB);
  });

  it.skipIf(process.getuid?.() !== 0)('counts processes per uid: a sandbox uid stops at its process limit', async () => {
    const uid = sandboxUid(`limits-test-${process.pid}`); // a uid no earlier run's processes (or zombies) count against
    const drop = ['/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'];
    const loop = await run([...prefix, ...drop, PYTHON, '-c', forkSleepers(60)]);
    const [started, ...sleepers] = loop.stdout.trim().split(' ').map(Number);
    stray.push(...sleepers);
    expect([loop.code, started]).toEqual([0, 31]);
    // Without the limit the same uid starts all of them.
    const free = await run([...drop, PYTHON, '-c', forkSleepers(60)]);
    const [all, ...more] = free.stdout.trim().split(' ').map(Number);
    stray.push(...more);
    expect(all).toBe(60);
    for (const pid of [...sleepers, ...more]) process.kill(pid, 'SIGKILL');
  });
});

describe('cgroup v2, against a stand-in folder (paths and values only, not the kernel)', async () => {
  const own = path.join(tmp, 'v2', 'service.slice');
  fs.mkdirSync(own, { recursive: true });
  fs.writeFileSync(path.join(own, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma misc\n');
  fs.writeFileSync(path.join(own, 'cgroup.subtree_control'), '');
  fs.writeFileSync(path.join(own, 'cgroup.procs'), '4242\n');
  fs.writeFileSync(path.join(own, 'cgroup.type'), 'domain\n'); // not the hierarchy's root
  const enforcer = await detectLimitEnforcer(log, { cgroups: ['cgroup-v2'], cgroupV2Dir: own });
  const sandbox = path.join(own, 'sandboxes', 'sb1');
  /** What the kernel puts in a new cgroup2 folder (the files this module reads or writes). */
  const kernelFiles = {
    'cgroup.procs': '',
    'memory.max': 'max',
    'memory.swap.max': 'max',
    'memory.oom.group': '0',
    'memory.events': 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
    'pids.max': 'max',
    'pids.events': 'max 0\n',
    'cpu.max': 'max 100000',
  };

  it("moves the service's processes into a leaf and enables the controllers for the sandboxes' cgroups", () => {
    expect(enforcer.kind).toBe('cgroup-v2');
    expect(read(path.join(own, 'service'), 'cgroup.procs')).toBe('4242');
    expect(read(own, 'cgroup.subtree_control')).toBe('+memory +pids +cpu');
    expect(read(path.join(own, 'sandboxes'), 'cgroup.subtree_control')).toBe('+memory +pids +cpu');
  });

  it('writes the limits into <own>/sandboxes/<id> and reads the events', async () => {
    fs.mkdirSync(sandbox, { recursive: true });
    for (const [file, text] of Object.entries(kernelFiles)) fs.writeFileSync(path.join(sandbox, file), text);
    const cgroup = await enforcer.create('sb1', LIMITS);
    expect(cgroup?.dirs).toEqual([sandbox]);
    const values = Object.fromEntries(
      ['memory.max', 'memory.swap.max', 'memory.oom.group', 'pids.max', 'cpu.max'].map((f) => [f, read(sandbox, f)]),
    );
    expect(values).toEqual({
      'memory.max': `${64 * MiB}`,
      'memory.swap.max': '0',
      'memory.oom.group': '1',
      'pids.max': '32',
      'cpu.max': '150000 100000',
    });
    expect(cgroup!.breach()).toBeNull();
    fs.writeFileSync(path.join(sandbox, 'memory.events'), kernelFiles['memory.events'].replace('oom_kill 0', 'oom_kill 2'));
    expect(cgroup!.breach()).toBe('The sandbox reached its memory limit (64 MiB): its processes were killed');
    fs.writeFileSync(path.join(sandbox, 'memory.events'), kernelFiles['memory.events']);
    fs.writeFileSync(path.join(sandbox, 'pids.events'), 'max 1\n');
    expect(cgroup!.breach()).toBe('The sandbox reached its process limit (32): a new process or thread was refused');
  });

  it('is found again by a restarted service, which finds itself in the leaf', async () => {
    const restarted = await detectLimitEnforcer(log, { cgroups: ['cgroup-v2'], cgroupV2Dir: path.join(own, 'service') });
    expect(restarted.find('sb1')?.dirs).toEqual([sandbox]);
    expect(restarted.find('sb2')).toBeNull();
    expect(() => restarted.find('../service')).toThrow(/not a sandbox id/);
  });

  it("leaves the processes of the hierarchy's root where they are (the root may have both)", async () => {
    const root = path.join(tmp, 'v2-root');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    fs.writeFileSync(path.join(root, 'cgroup.procs'), '1\n4242\n');
    expect((await detectLimitEnforcer(log, { cgroups: ['cgroup-v2'], cgroupV2Dir: root })).kind).toBe('cgroup-v2');
    expect(fs.existsSync(path.join(root, 'service'))).toBe(false);
    expect(read(root, 'cgroup.subtree_control')).toBe('+memory +pids +cpu');
  });

  it('is refused where the controllers are missing, for resource limits', async () => {
    const bare = path.join(tmp, 'v2-bare');
    fs.mkdirSync(bare);
    fs.writeFileSync(path.join(bare, 'cgroup.controllers'), 'cpu pids\n');
    const fallback = await detectLimitEnforcer(log, { cgroups: ['cgroup-v2'], cgroupV2Dir: bare });
    expect([fallback.kind, fallback.reason]).toEqual(['rlimits', expect.stringContaining('lacks the memory controller')]);
    expect(fs.existsSync(path.join(bare, 'service'))).toBe(false);
  });
});

describe('diskUsage', () => {
  it('counts the blocks a folder holds: a sparse file by what it holds, a hard link once', async () => {
    const dir = path.join(tmp, 'disk');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'data'), Buffer.alloc(3 * MiB, 1));
    fs.linkSync(path.join(dir, 'data'), path.join(dir, 'same-data'));
    fs.writeFileSync(path.join(dir, 'sparse'), '');
    fs.truncateSync(path.join(dir, 'sparse'), 1024 * MiB);
    const bytes = await diskUsage(dir);
    expect(bytes).toBeGreaterThanOrEqual(3 * MiB);
    expect(bytes).toBeLessThan(3 * MiB + 64 * 1024); // plus the folder's own blocks
    await expect(diskUsage(path.join(tmp, 'no-such-folder'))).rejects.toThrow(/du of .* failed: .*No such file/);
  });
});
