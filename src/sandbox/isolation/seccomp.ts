// A seccomp filter for process sandboxes: the system calls a sandbox has no use for and that
// would let it reach past its namespaces, answered EPERM; everything else allowed. bwrap loads
// it (`--seccomp FD`: the raw classic-BPF program, struct sock_filter[], no header) just before
// it runs the sandbox's command, with no_new_privs set, so nothing inside can lift it.
//
// Why these calls (the list container runtimes deny by default, Docker's and Podman's):
// - mounts and the new mount API, swap, reboot, kexec, kernel modules, acct, quotas, I/O ports,
//   clocks, syslog, vhangup and obsolete calls: the machine's, never a sandbox's business;
// - keyrings, bpf, perf_event_open, userfaultfd, io_uring: large kernel attack surface
//   (most kernel privilege escalations of recent years went through one of them);
// - open_by_handle_at (the "shocker" escape) and name_to_handle_at: a file by handle ignores
//   the mount view;
// - setns, unshare, clone with namespace flags: a user namespace gives its creator every
//   capability inside it, which is how most namespace escapes start; clone3 passes its flags in
//   memory a filter cannot read, so it answers ENOSYS and the C library falls back to clone;
// - ptrace, process_vm_*, kcmp, pidfd_getfd: reading or steering another process (the
//   sandbox's own too, which also means no strace or gdb inside);
// - personality: only the default (0) and the query (0xffffffff); the other flags turn off
//   address-space randomisation or make readable memory executable.
// Another ABI's calls (i386 via int 0x80 on x86_64) kill the process: the numbers differ, the
// list would not apply. x86_64's x32 calls (nr | 0x40000000) answer ENOSYS, as on a kernel
// built without x32.
//
// Numbers: the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl; aarch64 uses
// include/uapi/asm-generic/unistd.h). Calls aarch64 never had are left out there.

/** The architectures the filter knows (process.arch names). */
export const SECCOMP_ARCHES = ['x64', 'arm64'] as const;

const AUDIT_ARCH = { x64: 0xc000003e, arm64: 0xc00000b7 } as const;
const X32_BIT = 0x40000000;

/** The calls answered EPERM whatever their arguments: [x86_64, aarch64] numbers, null where the call does not exist. */
export const DENIED_SYSCALLS: Readonly<Record<string, readonly [number, number | null]>> = {
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  open_tree: [428, 428],
  move_mount: [429, 429],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  open_tree_attr: [467, 467],
  swapon: [167, 224],
  swapoff: [168, 225],
  reboot: [169, 142],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  acct: [163, 89],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  iopl: [172, null],
  ioperm: [173, null],
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  clock_adjtime: [305, 266],
  adjtimex: [159, 171],
  keyctl: [250, 219],
  add_key: [248, 217],
  request_key: [249, 218],
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  lookup_dcookie: [212, 18],
  open_by_handle_at: [304, 265],
  name_to_handle_at: [303, 264],
  setns: [308, 268],
  unshare: [272, 97],
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  kcmp: [312, 272],
  pidfd_getfd: [438, 438],
  vhangup: [153, 58],
  nfsservctl: [180, 42],
  uselib: [134, null],
  ustat: [136, null],
  sysfs: [139, null],
  _sysctl: [156, null],
  syslog: [103, 116],
};
/** Calls with an argument check (or their own answer): [x86_64, aarch64]. */
const CLONE: [number, number] = [56, 220];
const CLONE3: [number, number] = [435, 435];
const PERSONALITY: [number, number] = [135, 92];

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: any new namespace. */
const CLONE_NAMESPACES = 0x7e020000;
const PERSONA_QUERY = 0xffffffff;

const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;

// Classic BPF opcodes (linux/bpf_common.h) and struct seccomp_data offsets (linux/seccomp.h).
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const RET_K = 0x06;
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** Low 32 bits of args[0] (little-endian). */
const OFFSET_ARG0_LOW = 16;

/** The filter as bwrap's `--seccomp FD` reads it: struct sock_filter[] in the machine's byte order (little-endian). */
export function seccompFilter(arch: string = process.arch): Buffer {
  const column = archColumn(arch);
  const p = new Program();
  p.load(OFFSET_ARCH);
  p.jump(JEQ_K, AUDIT_ARCH[arch as keyof typeof AUDIT_ARCH], null, 'kill');
  p.load(OFFSET_NR);
  if (arch === 'x64') p.jump(JSET_K, X32_BIT, 'enosys', null);
  for (const numbers of Object.values(DENIED_SYSCALLS)) {
    const nr = numbers[column];
    if (nr !== null) p.jump(JEQ_K, nr, 'eperm', null);
  }
  p.jump(JEQ_K, CLONE[column], 'clone', null);
  p.jump(JEQ_K, PERSONALITY[column], 'personality', null);
  p.jump(JEQ_K, CLONE3[column], 'enosys', null);
  p.ret(RET_ALLOW);

  p.label('clone');
  p.load(OFFSET_ARG0_LOW);
  p.jump(JSET_K, CLONE_NAMESPACES, 'eperm', null);
  p.ret(RET_ALLOW);

  // personality takes an unsigned int: the low half of args[0] is all of it.
  p.label('personality');
  p.load(OFFSET_ARG0_LOW);
  p.jump(JEQ_K, 0, 'allow', null);
  p.jump(JEQ_K, PERSONA_QUERY, 'allow', 'eperm');

  p.label('allow');
  p.ret(RET_ALLOW);
  p.label('eperm');
  p.ret(RET_ERRNO | EPERM);
  p.label('enosys');
  p.ret(RET_ERRNO | ENOSYS);
  p.label('kill');
  p.ret(RET_KILL_PROCESS);
  return p.assemble();
}

function archColumn(arch: string): 0 | 1 {
  if (arch === 'x64') return 0;
  if (arch === 'arm64') return 1;
  throw new Error(`no seccomp filter for the ${arch} architecture (known: ${SECCOMP_ARCHES.join(', ')})`);
}

/** A jump target: a label further on, or null for the next instruction. */
type Target = string | null;

interface Instruction {
  code: number;
  k: number;
  jt: Target;
  jf: Target;
}

/** A straight-line program with forward jumps to labels (classic BPF jumps only forward, by at most 255). */
class Program {
  private readonly instructions: Instruction[] = [];
  private readonly labels = new Map<string, number>();

  load(offset: number): void {
    this.instructions.push({ code: LD_W_ABS, k: offset, jt: null, jf: null });
  }

  jump(code: number, k: number, jt: Target, jf: Target): void {
    this.instructions.push({ code, k, jt, jf });
  }

  ret(value: number): void {
    this.instructions.push({ code: RET_K, k: value, jt: null, jf: null });
  }

  label(name: string): void {
    this.labels.set(name, this.instructions.length);
  }

  assemble(): Buffer {
    const out = Buffer.alloc(this.instructions.length * 8);
    this.instructions.forEach((ins, i) => {
      out.writeUInt16LE(ins.code, i * 8);
      out.writeUInt8(this.offset(ins.jt, i), i * 8 + 2);
      out.writeUInt8(this.offset(ins.jf, i), i * 8 + 3);
      out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
    });
    return out;
  }

  private offset(target: Target, from: number): number {
    if (target === null) return 0;
    const to = this.labels.get(target);
    if (to === undefined) throw new Error(`seccomp program: no label ${target}`);
    const distance = to - from - 1;
    if (distance < 0 || distance > 255) throw new Error(`seccomp program: jump to ${target} out of range`);
    return distance;
  }
}
