// The simulated cluster of npm run bench:scale: the test suite's control plane (etcd,
// kube-apiserver, kwok; test/helpers/kube-control-plane.ts) with enough kwok Nodes for every
// sandbox at a kubelet's default of 110 pods per Node, a token per replica, and kube-apiserver's
// audit log of every request the replicas send (who sent what, on which object, answered how).
// In place of kube-scheduler (not part of the control plane) the bench binds each new pod to a
// Node, from a watch; the same watch notes when each pod first reads Ready.
import fs from 'node:fs';
import path from 'node:path';
import { CoreV1Api, makeInformer, type V1Pod } from '@kubernetes/client-node';
import { managedSelector } from '../src/sandbox/kubernetes/kubernetes-objects.js';
import { PODS_PER_NODE, startKubeControlPlane, type KubeControlPlane } from '../test/helpers/kube-control-plane.js';

export const NAMESPACE = 'sandboxes';
const BIND_WORKERS = 8;
/** Nodes filled to this many pods, leaving a kubelet's headroom under PODS_PER_NODE. */
const PODS_PER_NODE_USED = 100;

export interface ScaleCluster {
  cp: KubeControlPlane;
  nodes: number;
  auditLog: string;
  /** When each pod (by name) first read Ready, ms since the epoch. */
  readyAt: Map<string, number>;
  /** Pods bound to a Node by the bench, and bindings refused (already bound, or deleted meanwhile). */
  binder: { bound: number; failed: number };
  stop(): Promise<void>;
}

export async function startScaleCluster(opts: { pods: number; users: string[]; log: (line: string) => void }): Promise<ScaleCluster> {
  const nodes = Math.max(1, Math.ceil(opts.pods / PODS_PER_NODE_USED));
  const probe = await startKubeControlPlaneWithAudit(opts, nodes);
  const { cp, auditLog } = probe;
  const core = cp.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });

  const readyAt = new Map<string, number>();
  const binder = { bound: 0, failed: 0 };
  const queue: string[] = [];
  const queued = new Set<string>();
  let next = 0;
  let stopped = false;
  const idle: (() => void)[] = [];
  const note = (pod: V1Pod) => {
    const name = pod.metadata?.name;
    if (!name || pod.metadata?.deletionTimestamp) return;
    if (!pod.spec?.nodeName && !queued.has(name)) {
      queued.add(name);
      queue.push(name);
      idle.shift()?.();
    }
    const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    if (ready && !readyAt.has(name)) readyAt.set(name, Date.now());
  };
  const bindWorker = async () => {
    while (!stopped) {
      const name = queue.shift();
      if (!name) {
        await new Promise<void>((resolve) => idle.push(resolve));
        continue;
      }
      // Round robin over the Nodes: at most PODS_PER_NODE_USED pods each for the planned count.
      const node = cp.nodeNames[next++ % nodes]!;
      await core
        .createNamespacedPodBinding({
          name,
          namespace: NAMESPACE,
          body: { apiVersion: 'v1', kind: 'Binding', metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: node } },
        })
        .then(
          () => binder.bound++,
          () => binder.failed++,
        );
      queued.delete(name);
    }
  };
  const workers = Array.from({ length: BIND_WORKERS }, bindWorker);

  const informer = makeInformer<V1Pod>(
    cp.kubeConfig,
    `/api/v1/namespaces/${NAMESPACE}/pods`,
    () => core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: managedSelector }),
    managedSelector,
  );
  informer.on('add', note);
  informer.on('update', note);
  informer.on('error', () => {
    if (!stopped) setTimeout(() => void informer.start().catch(() => {}), 1_000);
  });
  await informer.start();

  return {
    cp,
    nodes,
    auditLog,
    readyAt,
    binder,
    async stop() {
      stopped = true;
      for (const resume of idle.splice(0)) resume();
      await informer.stop();
      await Promise.race([Promise.all(workers), new Promise((r) => setTimeout(r, 2_000))]);
      await cp.stop();
    },
  };
}

/** The control plane, with the replicas' requests (and only theirs) in a JSON audit log. */
async function startKubeControlPlaneWithAudit(
  opts: { users: string[]; log: (line: string) => void },
  nodes: number,
): Promise<{ cp: KubeControlPlane; auditLog: string }> {
  // The run dir exists only once the control plane starts; the audit files live beside it.
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'acp-scale-audit-'));
  const policy = path.join(dir, 'audit-policy.json');
  const auditLog = path.join(dir, 'audit.log');
  fs.writeFileSync(
    policy,
    JSON.stringify({
      apiVersion: 'audit.k8s.io/v1',
      kind: 'Policy',
      // One event per request, when its answer is complete (a watch: when it ends).
      omitStages: ['RequestReceived', 'ResponseStarted'],
      rules: [{ level: 'Metadata', users: opts.users }, { level: 'None' }],
    }),
  );
  const cp = await startKubeControlPlane({
    log: opts.log,
    users: opts.users,
    nodes,
    apiServerArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-format=json',
      // Batched: the log does not slow the requests it records.
      '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=1s',
      '--audit-log-maxsize=100000', // MB: never rotate during a run
    ],
  });
  const stop = cp.stop;
  cp.stop = async () => {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { cp, auditLog };
}

export { PODS_PER_NODE };
