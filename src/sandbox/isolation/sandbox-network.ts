// The network of an isolated process sandbox: a namespace of its own (bwrap --unshare-net) with
// nothing in it but its loopback, joined by pasta (Debian's passt package: the user-mode network
// stack rootless podman uses). pasta gives the namespace egress through ordinary sockets of the
// host, and nothing else: the host's loopback is not mapped in (--no-map-gw, and no port is
// forwarded by default), so a sandbox can neither reach nor bind a host port, and sees its own
// /proc/net. The paths through are exactly these:
//   - in: host 127.0.0.1:<free port> → the sandbox's agent server, VS Code and worker ports (the
//     reference container's ports inside: INSIDE_PORTS); pasta holds the host port;
//   - out: 127.0.0.1:8010 inside → the service's own port (the agent server's callbacks), and each
//     SANDBOX_HOST_PORTS entry → the same host port (a local LLM server);
//   - DNS: queries to DNS_ADDRESS are relayed to the host's resolver (it may listen on loopback);
//   - prohibit routes keep cloud metadata, link-local and private ranges out of reach.
// pasta is started as root (--runas 0): the Debian release cannot otherwise open /dev/net/tun
// (0600 here) nor join a namespace its dropped user does not own. It isolates itself right away
// (its own mount namespace, capabilities down to CAP_NET_BIND_SERVICE and CAP_SYS_ADMIN for
// setns, a seccomp allow-list): docs/decisions/0009-a-network-per-process-sandbox.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { identify, type ProcessIdentity } from '../process/process-identity.js';
import type { SandboxPorts } from '../sandbox-ports.js';

/** Inside every isolated sandbox, the ports of the reference's container (and of the Kubernetes pods). */
export const INSIDE_PORTS: Readonly<SandboxPorts> = Object.freeze({ agentServer: 8000, vscode: 8001, workers: [8011, 8012] });
/** Where the service answers inside every isolated sandbox: pasta relays it to the service's own port. */
export const CONTROL_PLANE_PORT = 8010;
export const CONTROL_PLANE_ORIGIN = `http://127.0.0.1:${CONTROL_PLANE_PORT}`;
/** The resolver address inside: link-local, routed to pasta, which relays to the host's resolver. */
export const DNS_ADDRESS = '169.254.1.1';
const INTERFACE = 'eth0';
const ATTACH_TIMEOUT_MS = 10_000;

/**
 * Ranges a sandbox must not reach through the host: cloud metadata and the rest of link-local
 * (instance credentials), private and shared ranges (the host's other interfaces, internal
 * services, other machines' databases). The host's own subnet stays reachable only through its
 * gateway's routes that are more specific (its address inside is the sandbox's own).
 */
const PROHIBITED = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '224.0.0.0/4',
  'fc00::/7',
  'fec0::/10',
];

export interface NetworkPlan {
  /** Host loopback port → port inside: how the service (and the owner's browser) reach the sandbox. */
  inbound: { host: number; inside: number }[];
  /** Port inside → host loopback port: the service's callbacks and the operator's SANDBOX_HOST_PORTS. */
  outbound: { inside: number; host: number }[];
}

/**
 * The outbound paths of a sandbox: the service (when it listens) and the operator's host ports.
 * `serviceAtOwnPort` (an automation run's): the service also at its own port inside, so the URLs
 * the automation service hands the run's code (this service's own address) work there; not where
 * that port is one of the sandbox's own.
 */
export function outboundPlan(servicePort: number | null, hostPorts: number[], serviceAtOwnPort = false): NetworkPlan['outbound'] {
  const paths = servicePort ? [{ inside: CONTROL_PLANE_PORT, host: servicePort }] : [];
  for (const port of hostPorts) if (port !== CONTROL_PLANE_PORT) paths.push({ inside: port, host: port });
  const taken = new Set([...paths.map((p) => p.inside), INSIDE_PORTS.agentServer, INSIDE_PORTS.vscode, ...INSIDE_PORTS.workers]);
  if (servicePort && serviceAtOwnPort && !taken.has(servicePort)) paths.push({ inside: servicePort, host: servicePort });
  return paths;
}

export function pastaArgs(plan: NetworkPlan, pidFile: string, privileged: boolean): string[] {
  const inbound = plan.inbound.flatMap((p) => ['-t', `127.0.0.1/${p.host}:${p.inside}`]);
  const outbound = plan.outbound.flatMap((p) => ['-T', `${p.inside}:${p.host}`]);
  return [
    ...(privileged ? ['--runas', '0'] : []),
    '--config-net',
    '--ns-ifname',
    INTERFACE,
    ...(inbound.length ? inbound : ['-t', 'none']),
    '-u',
    'none',
    ...(outbound.length ? outbound : ['-T', 'none']),
    '-U',
    'none',
    '--no-map-gw',
    '--dns-forward',
    DNS_ADDRESS,
    '--quiet',
    '--pid',
    pidFile,
    // The namespaces by descriptors the service opened: the Debian release opens the path after
    // dropping CAP_SYS_PTRACE, which a still-starting bwrap child (not dumpable) would need.
    ...(privileged ? [] : ['--userns', '/proc/self/fd/4']),
    '--netns',
    '/proc/self/fd/3',
  ];
}

/** The routing rules added inside, before the sandbox's command runs (`ip -batch`). */
export function routeBatch(): string {
  return [`route add ${DNS_ADDRESS}/32 dev ${INTERFACE}`, ...PROHIBITED.map((range) => `route add prohibit ${range}`)].join('\n') + '\n';
}

/** The sandbox's /etc/resolv.conf: pasta's relay, with the host's search domains and options. */
export function resolvConf(hostResolvConf: string): string {
  const kept = hostResolvConf.split('\n').filter((line) => /^\s*(search|domain|options)\b/.test(line));
  return [`nameserver ${DNS_ADDRESS}`, ...kept].join('\n') + '\n';
}

/**
 * Joins pasta to the namespaces of `nsPid` (bwrap's first process inside them) and adds the
 * routing rules; pasta then runs on in the background. Throws with pasta's or ip's reason.
 */
export async function attachNetwork(options: {
  pasta: string;
  ip: string;
  nsPid: number;
  privileged: boolean;
  plan: NetworkPlan;
  stateDir: string;
}): Promise<ProcessIdentity> {
  const pidFile = path.join(options.stateDir, 'network.pid');
  fs.rmSync(pidFile, { force: true });
  const namespaces = [fs.openSync(`/proc/${options.nsPid}/ns/net`, 'r')];
  if (!options.privileged) namespaces.push(fs.openSync(`/proc/${options.nsPid}/ns/user`, 'r'));
  try {
    await run(options.pasta, pastaArgs(options.plan, pidFile, options.privileged), namespaces, null, 'pasta');
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    const identity = identify(pid);
    if (!identity) throw new Error('pasta exited after starting');
    try {
      const enter = ['--net=/proc/self/fd/3', ...(options.privileged ? [] : ['--user=/proc/self/fd/4', '--preserve-credentials'])];
      await run('/usr/bin/nsenter', [...enter, options.ip, '-batch', '-'], namespaces, routeBatch(), 'ip');
    } catch (error) {
      process.kill(pid, 'SIGKILL');
      throw error;
    }
    return identity;
  } finally {
    for (const fd of namespaces) fs.closeSync(fd);
  }
}

/** Runs a helper with the namespace descriptors as fds 3 (and 4); rejects with its last error line. */
function run(command: string, args: string[], fds: number[], input: string | null, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: [input === null ? 'ignore' : 'pipe', 'ignore', 'pipe', ...fds],
      timeout: ATTACH_TIMEOUT_MS,
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A helper that exits before reading all of its input is judged by its exit, not by the pipe.
    child.stdin?.on('error', () => undefined).end(input);
    child.on('error', (error) => reject(new Error(`${name} does not run: ${error.message}`)));
    child.on('exit', (code, signal) => {
      if (code === 0) return resolve();
      // The Debian release also writes each line to syslog, and says so when that fails.
      const why = stderr
        .split('\n')
        .filter((line) => line.trim() && !line.includes('syslog') && !line.includes('AVX2'))
        .pop();
      reject(new Error(`${name} failed: ${why ?? (signal ? `killed by ${signal}` : `exit ${code}`)}`));
    });
  });
}

/** The ip program of iproute2 (sbin is not on every service's PATH). */
export function findIp(searchPath: string): string | null {
  for (const dir of [...searchPath.split(':'), '/usr/sbin', '/sbin', '/usr/bin', '/bin']) {
    const candidate = path.join(dir || '.', 'ip');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  return null;
}
