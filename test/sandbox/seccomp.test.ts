// The seccomp filter of process sandboxes (src/sandbox/isolation/seccomp.ts). First the program itself,
// read by a small classic-BPF interpreter written here (the kernel's instructions the filter
// uses: load word, jeq, jset, ret), for both architectures. Then the real thing: bwrap started
// by this test, as root, with the filter on `--seccomp FD` and the command run as root or
// dropped to a sandbox uid as isolation.ts does: the escape calls fail with EPERM, and the same
// calls and commands succeed (or fail otherwise) without the filter, so each check can fail;
// ordinary programs (Python with threads, git, node with a worker and a child, sh pipelines)
// print the same with and without it.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { sandboxUid } from '../../src/sandbox/isolation/isolation.js';
import { DENIED_SYSCALLS, seccompFilter } from '../../src/sandbox/isolation/seccomp.js';

const ARCH = { x64: 0xc000003e, arm64: 0xc00000b7, i386: 0x40000003 };
const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const KILL_PROCESS = 0x80000000;
/** Calls every program makes: [x86_64, aarch64]. */
const ORDINARY = { read: [0, 63], write: [1, 64], openat: [257, 56], execve: [59, 221], wait4: [61, 260], getpid: [39, 172] };

/** Runs a filter on one seccomp_data {nr, arch, args} and returns its answer. */
function evaluate(program: Buffer, nr: number, arch: number, args: number[] = []): number {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(nr >>> 0, 0);
  data.writeUInt32LE(arch, 4);
  args.forEach((arg, i) => data.writeBigUInt64LE(BigInt(arg), 16 + 8 * i));
  let accumulator = 0;
  for (let pc = 0; pc * 8 < program.length;) {
    const [code, jt, jf, k] = [program.readUInt16LE(pc * 8), program[pc * 8 + 2]!, program[pc * 8 + 3]!, program.readUInt32LE(pc * 8 + 4)];
    if (code === 0x20) {
      accumulator = data.readUInt32LE(k);
      pc += 1;
    } else if (code === 0x15) pc += 1 + (accumulator === k ? jt : jf);
    else if (code === 0x45) pc += 1 + ((accumulator & k) !== 0 ? jt : jf);
    else if (code === 0x06) return k;
    else throw new Error(`unexpected instruction ${code.toString(16)} at ${pc}`);
  }
  throw new Error('the program ran off its end');
}

/** `#define __NR_<name> <n>` lines of a kernel header, where this machine has it. */
function headerNumbers(file: string): Map<string, number> | null {
  if (!fs.existsSync(file)) return null;
  const found = fs.readFileSync(file, 'utf8').matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)$/gm);
  return new Map([...found].map((m) => [m[1]!, Number(m[2])]));
}

describe('the filter program', () => {
  for (const [arch, column] of [
    ['x64', 0],
    ['arm64', 1],
  ] as const) {
    it(`checks the architecture first and answers each call as meant (${arch})`, () => {
      const program = seccompFilter(arch);
      expect(program.length % 8).toBe(0);
      expect(program.length / 8).toBeLessThan(4096); // BPF_MAXINSNS
      // First: load seccomp_data.arch; second: compare with this architecture's.
      expect([program.readUInt16LE(0), program.readUInt32LE(4)]).toEqual([0x20, 4]);
      expect([program.readUInt16LE(8), program.readUInt32LE(12)]).toEqual([0x15, ARCH[arch]]);

      const own = ARCH[arch];
      for (const [name, numbers] of Object.entries(DENIED_SYSCALLS)) {
        const nr = numbers[column];
        if (nr !== null) expect([name, evaluate(program, nr, own)]).toEqual([name, EPERM]);
      }
      for (const [name, numbers] of Object.entries(ORDINARY)) {
        expect([name, evaluate(program, numbers[column]!, own)]).toEqual([name, ALLOW]);
        expect([name, evaluate(program, numbers[column]!, arch === 'x64' ? ARCH.arm64 : ARCH.x64)]).toEqual([name, KILL_PROCESS]);
      }
      const [clone, clone3, personality] = arch === 'x64' ? [56, 435, 135] : [220, 435, 92];
      expect(evaluate(program, clone, own, [0x01200011])).toBe(ALLOW); // fork's flags: CLONE_CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
      expect(evaluate(program, clone, own, [0x003d0f00])).toBe(ALLOW); // a thread's flags
      expect(evaluate(program, clone, own, [0x10000000 | 17])).toBe(EPERM); // CLONE_NEWUSER
      expect(evaluate(program, clone, own, [0x40000000 | 17])).toBe(EPERM); // CLONE_NEWNET
      expect(evaluate(program, clone3, own)).toBe(ENOSYS);
      expect(evaluate(program, personality, own, [0])).toBe(ALLOW);
      expect(evaluate(program, personality, own, [0xffffffff])).toBe(ALLOW);
      expect(evaluate(program, personality, own, [0x0040000])).toBe(EPERM); // ADDR_NO_RANDOMIZE
    });
  }

  it('refuses x32 calls on x86_64 and has no x86-only calls on aarch64', () => {
    expect(evaluate(seccompFilter('x64'), 0x40000000 | 39, ARCH.x64)).toBe(ENOSYS); // x32 getpid
    expect(evaluate(seccompFilter('x64'), 20, ARCH.i386)).toBe(KILL_PROCESS);
    expect(evaluate(seccompFilter('arm64'), 172 | 0x40000000, ARCH.arm64)).toBe(ALLOW); // no x32 there: an unknown number, the kernel's ENOSYS
    expect(DENIED_SYSCALLS.iopl![1]).toBeNull();
    expect(() => seccompFilter('ia32')).toThrow(/no seccomp filter for the ia32 architecture/);
  });

  it("uses the kernel's numbers (checked against this machine's headers where it has them)", () => {
    const x64 = headerNumbers('/usr/include/x86_64-linux-gnu/asm/unistd_64.h');
    const generic = headerNumbers('/usr/include/asm-generic/unistd.h');
    let compared = 0;
    for (const [name, [x, a]] of Object.entries(DENIED_SYSCALLS)) {
      // A header older than a call (open_tree_attr is Linux 6.15) does not know it yet.
      if (x64?.has(name)) (expect([name, x]).toEqual([name, x64.get(name)]), compared++);
      if (generic && a !== null && generic.has(name)) (expect([name, a]).toEqual([name, generic.get(name)]), compared++);
      if (generic && a === null) expect(generic.has(name)).toBe(false);
    }
    if (x64 && generic) expect(compared).toBeGreaterThanOrEqual(90); // the check ran: 100 here (Debian 12 headers)
  });
});

const BWRAP = execFileSync('bash', [path.join(PACKAGE_ROOT, 'scripts', 'setup-debian-tool.sh'), 'bubblewrap', 'bwrap'], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'ignore'],
})
  .trim()
  .split('\n')
  .pop()!;
const UID = sandboxUid('seccomp-test');
const PROBE = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'seccomp-probe.py');
const INSIDE_PROBE = '/tmp/seccomp-probe.py';
const PYTHON = '/usr/bin/python3'; // the system's: a uid of a sandbox cannot read root's pyenv

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in bwrap as isolation.ts does (root outside; as root or the sandbox uid inside), the filter on fd 3 when asked. */
function inBwrap(command: string[], options: { filter: boolean; as: 'root' | 'sandbox' }): Promise<Outcome> {
  const drop = ['/usr/bin/setpriv', `--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--bounding-set=-all', '--inh-caps=-all', '--'];
  const args = [
    ...['--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp', '--unshare-pid', '--unshare-ipc'],
    // The probe at a path of its own: a checkout under /tmp is under the private /tmp.
    ...['--ro-bind', PROBE, INSIDE_PROBE],
    ...(options.filter ? ['--seccomp', '3'] : []),
    '--',
    ...(options.as === 'sandbox' ? drop : []),
    ...command,
  ];
  const env = { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' };
  const child = spawn(BWRAP, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  // bwrap reads the program from the pipe to its end.
  (child.stdio[3] as NodeJS.WritableStream).end(options.filter ? seccompFilter() : Buffer.alloc(0));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

const probe = async (filter: boolean, as: 'root' | 'sandbox') => {
  const outcome = await inBwrap([PYTHON, INSIDE_PROBE], { filter, as });
  expect(outcome.code, outcome.stderr).toBe(0);
  return JSON.parse(outcome.stdout) as Record<string, string>;
};

describe.skipIf(process.arch !== 'x64' || process.getuid?.() !== 0)('the filter in a real bubblewrap', () => {
  it('makes the escape calls fail with EPERM, for root as for the sandbox uid; without it they work', async () => {
    const unfiltered = {
      keyctl: 'ok',
      bpf: 'EINVAL', // reached the kernel, which found the empty request invalid
      ptrace_traceme: 'ok',
      unshare_user: 'ok',
      clone_new_user: 'ok',
      clone3: 'EINVAL', // likewise
      personality_query: 'ok',
      personality_no_aslr: 'ok',
      getpid: 'ok',
    };
    const filtered = {
      keyctl: 'EPERM',
      bpf: 'EPERM',
      ptrace_traceme: 'EPERM',
      unshare_user: 'EPERM',
      clone_new_user: 'EPERM',
      clone3: 'ENOSYS', // the C library then falls back to clone
      personality_query: 'ok',
      personality_no_aslr: 'EPERM',
      getpid: 'ok',
    };
    for (const as of ['root', 'sandbox'] as const) {
      expect(await probe(false, as)).toEqual(unfiltered);
      expect(await probe(true, as)).toEqual(filtered);
    }
  });

  it('stops unshare(1) and mount(8): the filter, not the uid (mount runs as root)', async () => {
    const unshare = ['/usr/bin/unshare', '--user', '/usr/bin/true'];
    expect((await inBwrap(unshare, { filter: false, as: 'sandbox' })).code).toBe(0);
    const refused = await inBwrap(unshare, { filter: true, as: 'sandbox' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/unshare failed: Operation not permitted/);

    const mount = ['/usr/bin/mount', '-t', 'tmpfs', 'none', '/mnt'];
    const mounted = await inBwrap(['/bin/sh', '-c', `${mount.join(' ')} && grep -c ' /mnt tmpfs' /proc/self/mounts`], {
      filter: false,
      as: 'root',
    });
    expect([mounted.code, mounted.stdout.trim()]).toEqual([0, '1']);
    const notMounted = await inBwrap(mount, { filter: true, as: 'root' });
    expect(notMounted.code).not.toBe(0);
    expect(notMounted.stderr).toMatch(/permission denied/);
  });

  it("kills a process that makes another ABI's call (i386 getpid through int 0x80)", async () => {
    const i386 = [
      PYTHON,
      '-c',
      [
        'import ctypes, mmap',
        'page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)',
        'page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20; int 0x80; ret',
        'print(ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(page)))())',
      ].join('\n'),
    ];
    const unfiltered = await inBwrap(i386, { filter: false, as: 'sandbox' });
    expect([unfiltered.code, Number(unfiltered.stdout) > 0]).toEqual([0, true]);
    const filtered = await inBwrap(i386, { filter: true, as: 'sandbox' });
    // The sandbox's command is bwrap's child: bwrap reports it as 128 + SIGSYS (31).
    expect([filtered.code, filtered.stdout]).toEqual([128 + 31, '']);
  });

  it('runs ordinary programs as without it: Python threads and children, git, node workers, sh pipelines', async () => {
    const script = [
      `${PYTHON} -c "import threading, subprocess
ids = []
threads = [threading.Thread(target=lambda: ids.append(threading.get_native_id())) for _ in range(16)]
[t.start() for t in threads]; [t.join() for t in threads]
print('threads', len(set(ids)), subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())"`,
      'git --version | cut -d" " -f1,2',
      'cd /tmp && git init -q r && cd r && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m first && git log --format=%s',
      `node -e "const { Worker } = require('node:worker_threads');
new Worker('require(\\'node:worker_threads\\').parentPort.postMessage(6 * 7)', { eval: true }).on('message', (m) => {
  console.log('worker', m, require('node:child_process').execSync('echo spawned').toString().trim());
});"`,
      'seq 1 5000 | sort -rn | head -n 1 | (read n; echo "pipeline $n")',
    ].join('\n');
    const expected = ['threads 16 child', 'git version', 'first', 'worker 42 spawned', 'pipeline 5000'].join('\n') + '\n';
    for (const filter of [false, true]) {
      const outcome = await inBwrap(['/bin/sh', '-ec', script], { filter, as: 'sandbox' });
      expect({ filter, code: outcome.code, stdout: outcome.stdout, stderr: outcome.stderr }).toEqual({
        filter,
        code: 0,
        stdout: expected,
        stderr: '',
      });
    }
  });
});
