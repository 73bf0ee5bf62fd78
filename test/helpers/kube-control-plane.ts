// A real, throw-away Kubernetes control plane for tests: etcd -> kube-apiserver -> kwok on
// free loopback ports, with one kwok-managed fake Node so Pods bound to it reach Running.
// It follows docs/kube-control-plane-smoke.sh; flags and gotchas are in
// docs/kube-control-plane-notes.md. The binaries come from scripts/build-kube.sh (cached).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { cacheRoot } from '../../src/config/config-values.js';
import { freePort, PACKAGE_ROOT, stopChild } from '../../src/processes.js';

export interface KubeControlPlane {
  /** https://127.0.0.1:<port> (self-signed certificate, hence skipTLSVerify). */
  server: string;
  /** Bearer token of a user in system:masters. */
  token: string;
  kubeConfig: KubeConfig;
  /** The same admin access as a kubeconfig file, for kubectl (--kubeconfig). */
  kubeconfigFile: string;
  /** A kwok-managed Node; Pods with spec.nodeName set to it become Running. */
  nodeName: string;
  /** Every kwok-managed Node (nodeName first). */
  nodeNames: string[];
  /** A kubeconfig file per extra user (options.users), for clients the audit log tells apart. */
  userKubeconfigs: Record<string, string>;
  /** Holds the token file, keys, kubeconfig, etcd data and the process logs; removed by stop(). */
  runDir: string;
  /** Stops only kube-apiserver (etcd and kwok keep running), for outage tests. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port and etcd, and waits until it is ready. */
  startApiServer(): Promise<void>;
  /** Stops kwok, kube-apiserver and etcd in that order and removes runDir. */
  stop(): Promise<void>;
}

const NODE_NAME = 'kwok-node-0';
const START_TIMEOUT_MS = 60_000;
/** A kubelet's default --max-pods, reported by every fake Node. */
export const PODS_PER_NODE = 110;

export interface KubeControlPlaneOptions {
  log?: (line: string) => void;
  /** Users in system:masters besides the admin, each with a token and a kubeconfig file of its own. */
  users?: string[];
  /** kwok-managed Nodes to create (default 1): kwok-node-0, kwok-node-1, … */
  nodes?: number;
  /** More kube-apiserver flags (the scale bench's audit log). */
  apiServerArgs?: string[];
}

export async function startKubeControlPlane(opts: KubeControlPlaneOptions = {}): Promise<KubeControlPlane> {
  const log = opts.log ?? (() => {});
  const t0 = Date.now();
  const since = () => `${((Date.now() - t0) / 1000).toFixed(2)}s`;

  const bin = await buildKube(log);
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-kube-'));
  const [etcdPort, peerPort, apiPort] = await distinctFreePorts(3);
  const server = `https://127.0.0.1:${apiPort}`;
  const token = `test-token-${randomBytes(16).toString('hex')}`;

  // One admin user in system:masters: RBAC lets it do everything, no certificates needed.
  const tokenFile = path.join(runDir, 'tokens.csv');
  const userTokens = Object.fromEntries((opts.users ?? []).map((user) => [user, `${user}-${randomBytes(16).toString('hex')}`]));
  fs.writeFileSync(
    tokenFile,
    [`${token},admin,admin,"system:masters"`, ...Object.entries(userTokens).map(([u, t]) => `${t},${u},${u},"system:masters"`)].join('\n') +
      '\n',
  );
  // kube-apiserver refuses to start without a service-account signing key.
  const saKey = path.join(runDir, 'sa.key');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  fs.writeFileSync(saKey, privateKey.export({ type: 'pkcs1', format: 'pem' }));
  // kwok only takes a kubeconfig file; JSON is valid YAML, so no YAML writer is needed.
  const kubeconfigFile = path.join(runDir, 'kubeconfig');
  const writeKubeconfig = (file: string, user: string, userToken: string) =>
    fs.writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'local', cluster: { server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: user, user: { token: userToken } }],
        contexts: [{ name: 'local', context: { cluster: 'local', user } }],
        'current-context': 'local',
      }),
    );
  writeKubeconfig(kubeconfigFile, 'admin', token);
  const userKubeconfigs: Record<string, string> = {};
  for (const [user, userToken] of Object.entries(userTokens)) {
    userKubeconfigs[user] = path.join(runDir, `kubeconfig-${user}`);
    writeKubeconfig(userKubeconfigs[user], user, userToken);
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'local', server, skipTLSVerify: true }],
    users: [{ name: 'admin', token }],
    contexts: [{ name: 'local', cluster: 'local', user: 'admin' }],
    currentContext: 'local',
  });

  const etcdArgs = [
    '--name=t',
    `--data-dir=${path.join(runDir, 'etcd')}`,
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=t=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync', // test data is throw-away; fsync dominates etcd latency
    '--log-level=warn',
  ];
  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    // Self-signed serving certificate, generated once and reused by restarts.
    `--cert-dir=${path.join(runDir, 'certs')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${saKey}`,
    `--service-account-signing-key-file=${saKey}`,
    `--token-auth-file=${tokenFile}`,
    '--authorization-mode=RBAC',
    // No controller-manager runs: without these, Pods wait for a token and PVC deletes never finish.
    '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
    '--enable-priority-and-fairness=false',
    '--profiling=false',
    // Otherwise SIGTERM waits for open watches (kwok's) until the 60 s request timeout,
    // and stopApiServer() would end in SIGKILL; with it the apiserver exits in ~1 s.
    '--shutdown-watch-termination-grace-period=1s',
    ...(opts.apiServerArgs ?? []),
  ];
  const kwokArgs = [
    `--kubeconfig=${kubeconfigFile}`,
    // Without a manage flag kwok exits "no nodes are managed"; only our annotated Node is fake.
    '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
  ];

  const nodeNames = Array.from({ length: opts.nodes ?? 1 }, (_, i) => `kwok-node-${i}`);
  let etcd: ChildProcess | undefined;
  let apiServer: ChildProcess | undefined;
  let kwok: ChildProcess | undefined;
  let stopped = false;

  // If the test process exits without stop() (crash, killed worker), do not leave orphans.
  const killOnExit = () => {
    for (const child of [kwok, apiServer, etcd]) if (child && child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const startApiServer = async () => {
    const t = Date.now();
    apiServer = spawnLogged(path.join(bin, 'kube-apiserver'), apiArgs, runDir, 'apiserver');
    const child = apiServer;
    await waitUntil('kube-apiserver /readyz', child, runDir, 'apiserver', async () => (await readyz(server, token)) === 'ok');
    log(`kube-apiserver ready after ${((Date.now() - t) / 1000).toFixed(2)}s`);
  };
  const stopApiServer = async () => {
    if (apiServer) await stopChild(apiServer);
  };
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // Reverse start order: stopping etcd first floods the apiserver log with dial errors.
    for (const child of [kwok, apiServer, etcd]) if (child) await stopChild(child);
    process.removeListener('exit', killOnExit);
    fs.rmSync(runDir, { recursive: true, force: true });
  };

  try {
    etcd = spawnLogged(path.join(bin, 'etcd'), etcdArgs, runDir, 'etcd');
    const etcdChild = etcd;
    await waitUntil('etcd /health', etcdChild, runDir, 'etcd', async () => {
      const res = await fetch(`http://127.0.0.1:${etcdPort}/health`);
      return res.ok;
    });
    log(`etcd healthy after ${since()}`);

    await startApiServer();

    // kwok reads ~/.kwok/kwok.yaml if present; an empty HOME keeps a developer's config out.
    kwok = spawnLogged(path.join(bin, 'kwok'), kwokArgs, runDir, 'kwok', { HOME: runDir });
    const kwokChild = kwok;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const name of nodeNames) {
      await core.createNode({
        body: {
          metadata: {
            name,
            annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
            labels: { type: 'kwok' },
          },
          spec: {},
          status: { capacity: { pods: String(PODS_PER_NODE) }, allocatable: { pods: String(PODS_PER_NODE) } },
        },
      });
    }
    // Wait until kwok has taken the Nodes over, so callers can bind Pods to them right away.
    await waitUntil('kwok to mark the Nodes Ready', kwokChild, runDir, 'kwok', async () => {
      const nodes = await core.listNode({ labelSelector: 'type=kwok' });
      const ready = nodes.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      return ready.length === nodeNames.length;
    });
    log(`control plane ready after ${since()} (run dir ${runDir})`);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    server,
    token,
    kubeConfig,
    kubeconfigFile,
    nodeName: NODE_NAME,
    nodeNames,
    userKubeconfigs,
    runDir,
    stopApiServer,
    startApiServer,
    stop,
  };
}

/**
 * Runs scripts/build-kube.sh (instant when cached) and returns the bin dir it prints last:
 * kube-apiserver, etcd, kwok and kubectl, all of one Kubernetes version.
 */
export async function buildKube(log: (line: string) => void = () => {}): Promise<string> {
  const script = path.join(PACKAGE_ROOT, 'scripts', 'build-kube.sh');
  const cacheDir = cacheRoot();
  return new Promise((resolve, reject) => {
    const child = execFile(
      'bash',
      [script],
      { env: { ...process.env, AGENT_CP_CACHE_DIR: cacheDir }, maxBuffer: 1024 * 1024 },
      (error, stdout) => {
        if (error) return reject(new Error(`build-kube.sh failed: ${error.message}`));
        const bin = stdout.trim().split('\n').pop() ?? '';
        if (!['kube-apiserver', 'kubectl'].every((name) => fs.existsSync(path.join(bin, name))))
          return reject(new Error(`build-kube.sh printed no bin dir: ${stdout}`));
        resolve(bin);
      },
    );
    // A cold build takes minutes; pass its progress on.
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(line.trim());
    });
  });
}

/** Ports picked one by one could repeat (each is released before the next is asked for). */
async function distinctFreePorts(n: number): Promise<[number, number, number]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports] as [number, number, number];
}

/** Starts a binary with stdout and stderr appended to <runDir>/<name>.log (kept out of test output). */
function spawnLogged(binary: string, args: string[], runDir: string, name: string, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const fd = fs.openSync(path.join(runDir, `${name}.log`), 'a');
  try {
    return spawn(binary, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
  } finally {
    fs.closeSync(fd); // the child has its own copy
  }
}

/** Polls check() until it returns true; fails early (with the log tail) if the child exits. */
async function waitUntil(what: string, child: ChildProcess, runDir: string, name: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) while waiting for ${what}:\n${logTail(runDir, name)}`);
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${logTail(runDir, name)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function logTail(runDir: string, name: string): string {
  try {
    return fs
      .readFileSync(path.join(runDir, `${name}.log`), 'utf8')
      .split('\n')
      .slice(-30)
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/** GET /readyz with the bearer token; node:https because fetch cannot skip TLS verification. */
function readyz(server: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      `${server}/readyz`,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body.trim()));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/**
 * Stands in for kube-scheduler (not part of the test control plane): binds every pending
 * pod of a namespace to the kwok node, as the scheduler would. Returns a stop function.
 */
export function startPodBinder(cp: KubeControlPlane, namespace: string, shouldBind: (pod: V1Pod) => boolean = () => true): () => void {
  const core = cp.kubeConfig.makeApiClient(CoreV1Api);
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      try {
        const pending = await core.listNamespacedPod({ namespace, fieldSelector: 'spec.nodeName=' });
        for (const pod of pending.items.filter(shouldBind)) {
          const name = pod.metadata!.name!;
          await core
            .createNamespacedPodBinding({
              name,
              namespace,
              body: {
                apiVersion: 'v1',
                kind: 'Binding',
                metadata: { name },
                target: { apiVersion: 'v1', kind: 'Node', name: cp.nodeName },
              },
            })
            .catch(() => {}); // already bound or deleted meanwhile
        }
      } catch {
        // API server down (outage tests): keep trying
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  void loop();
  return () => {
    stopped = true;
  };
}

/** Whether an object exists: true when the read succeeds, false on 404, the error otherwise. */
export async function exists(read: () => Promise<unknown>): Promise<boolean> {
  return read().then(
    () => true,
    (error: { code?: number }) => {
      if (error.code === 404) return false;
      throw error;
    },
  );
}
