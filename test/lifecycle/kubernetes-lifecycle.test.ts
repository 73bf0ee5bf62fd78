// The lifecycle policies on the Kubernetes runtime, against a real kube-apiserver (etcd +
// kwok) with two replicas on one database and namespace: idle pause deletes the pod and keeps
// the claim, resume recreates it, retention and reconcile remove every object, and a warm pod
// goes to exactly one of two users. Small timers: 2 s idle, 4 s retention, 200 ms passes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WARM_POOL_OWNER } from '../../models/index.js';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { exists, startKubeControlPlane, startPodBinder, type KubeControlPlane } from '../helpers/kube-control-plane.js';
import { conversation, lifecyclePasses, metric, sandbox, waitForSandbox } from '../helpers/lifecycle.js';

const IMAGE = 'ghcr.io/openhands/agent-server:lifecycle-python';
const OTHER_IMAGE = 'ghcr.io/openhands/agent-server:other-python';
const IDLE_MS = 2_000;
const namespace = 'lifecycle-test';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-k8s-lifecycle-'));
let cp: KubeControlPlane;
let core: CoreV1Api;
let networking: NetworkingV1Api;
let stopBinder: () => void;
let app: TestApp;
let replica: TestApp;

beforeAll(async () => {
  cp = await startKubeControlPlane();
  core = cp.kubeConfig.makeApiClient(CoreV1Api);
  networking = cp.kubeConfig.makeApiClient(NetworkingV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  stopBinder = startPodBinder(cp, namespace);
  const specsFile = path.join(tmp, 'specs.json');
  fs.writeFileSync(
    specsFile,
    JSON.stringify([
      { id: IMAGE, command: ['--port', '8000'] },
      { id: OTHER_IMAGE, command: ['--port', '8000'] },
    ]),
  );
  const env = {
    MONGODB_URI: testDatabaseUri(uniqueDbName('k8s-lifecycle')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_RUNTIME: 'kubernetes',
    SANDBOX_K8S_KUBECONFIG: path.join(cp.runDir, 'kubeconfig'),
    SANDBOX_K8S_NAMESPACE: namespace,
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_DOMAIN: 'sandboxes.example.com',
    SANDBOX_MAX_RUNNING_PER_USER: '10',
    SANDBOX_STARTUP_TIMEOUT_MS: '20000',
    SANDBOX_IDLE_PAUSE_SECONDS: String(IDLE_MS / 1000),
    SANDBOX_PAUSED_RETENTION_SECONDS: '4',
    SANDBOX_WARM_POOL_SIZE: '1',
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    SANDBOX_RECONCILE_INTERVAL_MS: '1000',
  };
  app = await startTestApp('k8s-lifecycle', env);
  replica = await startTestApp('k8s-lifecycle-replica', env);
}, 15 * 60_000);

afterAll(async () => {
  await replica?.stop({ keepSandboxes: true });
  await app?.stop();
  stopBinder?.();
  await cp?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}, 60_000);

const name = (id: string) => `sandbox-${id}`;
const podExists = (id: string) => exists(() => core.readNamespacedPod({ namespace, name: name(id) }));
const claimExists = (id: string) => exists(() => core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name(id)}-workspace` }));
/** Whether any of the sandbox's five objects is left. */
const anyObjectLeft = async (id: string) =>
  (
    await Promise.all([
      podExists(id),
      claimExists(id),
      exists(() => core.readNamespacedSecret({ namespace, name: name(id) })),
      exists(() => core.readNamespacedService({ namespace, name: name(id) })),
      exists(() => networking.readNamespacedIngress({ namespace, name: name(id) })),
    ])
  ).some(Boolean);

let users = 0;
async function user() {
  const userId = `k8s-user-${++users}`;
  return { userId, key: await app.keyFor(userId) };
}

async function startOther(key: string) {
  const res = await call(app, 'POST', `/api/v1/sandboxes?sandbox_spec_id=${encodeURIComponent(OTHER_IMAGE)}`, { key });
  expect(res.status, res.text).toBe(200);
  return { id: res.body.id as string, sandboxKey: res.body.session_api_key as string };
}

/** The agent server's conversation webhook: creates the conversation record for the sandbox's owner. */
async function reportConversation(sandboxId: string, sandboxKey: string, conversationId: string, status: string) {
  const res = await call(app, 'POST', `/api/v1/webhooks/${sandboxId}/conversations`, {
    body: { id: conversationId, execution_status: status },
    headers: { 'x-session-api-key': sandboxKey },
  });
  expect(res.status, res.text).toBe(200);
}

describe('lifecycle on Kubernetes', () => {
  it('pauses an idle sandbox by deleting its pod, keeps the claim, and resumes it on the same claim', async () => {
    const { userId, key } = await user();
    const { id } = await startOther(key);
    await waitForSandbox(app, key, id, 'RUNNING');
    const claimUid = (await core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name(id)}-workspace` })).metadata?.uid;

    const paused = await waitForSandbox(app, key, id, 'PAUSED', 15_000);
    expect(paused.status_reason).toMatch(/^Paused automatically/);
    expect(await podExists(id)).toBe(false);
    expect(await claimExists(id)).toBe(true);

    const connection = await app.server.deps.services.sandboxLifecycle.ensureRunning(userId, id);
    expect(connection.state.status).toBe('RUNNING');
    const pod = await core.readNamespacedPod({ namespace, name: name(id) });
    expect(pod.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName).toBe(`${name(id)}-workspace`);
    expect((await core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name(id)}-workspace` })).metadata?.uid).toBe(claimUid);
  });

  it('leaves a sandbox whose agent reports running alone; once it stops, pauses it and after retention deletes every object', async () => {
    const { key } = await user();
    const { id, sandboxKey } = await startOther(key);
    await waitForSandbox(app, key, id, 'RUNNING');
    const conversationId = crypto.randomBytes(16).toString('hex');
    await reportConversation(id, sandboxKey, conversationId, 'running');
    // Past its idle time, and the pauser has looked at it since.
    await eventually('the sandbox to be past its idle time', async () => {
      const record = await app.rawCollection('sandboxes').findOne({ _id: id as never });
      return Date.now() - (record?.lastUsedAt as Date).getTime() > IDLE_MS;
    });
    await lifecyclePasses([app], 'idle-pause', 2);
    expect((await sandbox(app, key, id)).status).toBe('RUNNING');

    await reportConversation(id, sandboxKey, conversationId, 'finished');
    await waitForSandbox(app, key, id, 'PAUSED', 15_000);
    await eventually('retention to delete the sandbox', async () => (await sandbox(app, key, id)) === null, 30_000);
    await eventually('every object gone', async () => !(await anyObjectLeft(id)));
    expect(await conversation(app, key, conversationId)).toMatchObject({
      sandbox_status: 'MISSING',
      sandbox_status_reason: 'The workspace was deleted after 4 s paused (retention)',
    });
  });

  it('removes objects labelled as ours that no record names, and records whose objects are gone', async () => {
    const orphan = crypto.randomBytes(16).toString('hex');
    await app.server.deps.runtime.start({
      sandboxId: orphan,
      userId: 'nobody',
      spec: { id: OTHER_IMAGE, command: ['--port', '8000'], initial_env: {}, working_dir: '/workspace/project' },
      sessionApiKey: 'orphan-key',
      secretKey: 'sealing-key',
      webhookBaseUrl: 'http://127.0.0.1:9/api/v1/webhooks/x',
    });
    expect(await podExists(orphan)).toBe(true);

    const { key } = await user();
    const { id: lost, sandboxKey } = await startOther(key);
    await waitForSandbox(app, key, lost, 'RUNNING');
    const conversationId = crypto.randomBytes(16).toString('hex');
    await reportConversation(lost, sandboxKey, conversationId, 'idle');
    // Behind the service's back: the pod and the claim of a recorded sandbox go.
    await core.deleteNamespacedPod({ namespace, name: name(lost), gracePeriodSeconds: 0 });
    await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: `${name(lost)}-workspace` });

    await eventually('the orphan removed', async () => !(await anyObjectLeft(orphan)), 20_000);
    await eventually('the lost record removed', async () => (await sandbox(app, key, lost)) === null, 20_000);
    expect(await anyObjectLeft(lost)).toBe(false); // its secret, service and ingress too
    expect((await conversation(app, key, conversationId)).sandbox_status_reason).toBe(
      'The workspace no longer exists: its runtime objects were removed outside this service',
    );
    const removed = async (action: string) =>
      (await metric(app, 'sandbox_lifecycle_actions_total', { action })) +
      (await metric(replica, 'sandbox_lifecycle_actions_total', { action }));
    expect(await removed('orphan_removed')).toBe(1);
    expect(await removed('lost_record_removed')).toBe(1);
  });

  it('hands the warm pod to exactly one of two users starting at once on two replicas, and refills', async () => {
    const warmId = await eventually('a running warm sandbox', async () => {
      const warm = await app.rawCollection('sandboxes').find({ userId: WARM_POOL_OWNER }).toArray();
      if (warm.length !== 1) return null;
      const id = String(warm[0]!._id);
      return (await app.server.deps.runtime.state(id, 'running')).status === 'RUNNING' ? id : null;
    });
    const pod = await core.readNamespacedPod({ namespace, name: name(warmId) });
    expect(pod.metadata?.annotations?.['agent-control-plane/owner']).toBe(WARM_POOL_OWNER);

    const [a, b] = [await user(), await user()];
    const started = await Promise.all([
      call(app, 'POST', '/api/v1/sandboxes', { key: a.key }),
      call(replica, 'POST', '/api/v1/sandboxes', { key: b.key }),
    ]);
    expect(started.map((r) => r.status)).toEqual([200, 200]);
    const ids = started.map((r) => r.body.id as string);
    expect(ids.filter((id) => id === warmId)).toHaveLength(1);
    const winner = [a, b][ids.indexOf(warmId)]!;
    expect((await app.rawCollection('sandboxes').findOne({ _id: warmId as never }))?.userId).toBe(winner.userId);
    // The claimant's key is the one in the pod's secret, made at warm-up.
    const secret = await core.readNamespacedSecret({ namespace, name: name(warmId) });
    const claimed = await sandbox(app, winner.key, warmId);
    expect(Buffer.from(secret.data!.OH_SESSION_API_KEYS_0!, 'base64').toString()).toBe(claimed.session_api_key);

    const refill = await eventually('a new warm sandbox', async () => {
      const warm = await app.rawCollection('sandboxes').find({ userId: WARM_POOL_OWNER }).toArray();
      return warm.length === 1 && String(warm[0]!._id) !== warmId ? String(warm[0]!._id) : null;
    });
    await eventually('the refill running', async () => (await app.server.deps.runtime.state(refill, 'running')).status === 'RUNNING');
  });
});
