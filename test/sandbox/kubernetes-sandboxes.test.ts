// Sandboxes on the Kubernetes runtime against a real kube-apiserver (etcd + kwok), over the
// service's real HTTP API. kwok plays the kubelet (pods become Running/Ready without
// containers); a small binder plays the scheduler.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, NetworkingV1Api, NodeV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { exists, startKubeControlPlane, startPodBinder, type KubeControlPlane } from '../helpers/kube-control-plane.js';
import { generateKeyText } from '../../src/crypto.js';
import { describeSandboxContract } from './contract.js';

const IMAGE = 'ghcr.io/openhands/agent-server:test-python';
// Pods of this image are never bound to a node (as if unschedulable), so they never get ready.
const NEVER_READY_IMAGE = 'ghcr.io/openhands/agent-server:never-scheduled';
const namespace = 'sandboxes-test';
const dbName = uniqueDbName('k8s');
const encryptionKey = generateKeyText();
let cp: KubeControlPlane;
let core: CoreV1Api;
let stopBinder: () => void;
let app: TestApp;
let key: string;
let env: Record<string, string>;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-k8s-'));

beforeAll(async () => {
  cp = await startKubeControlPlane();
  core = cp.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // Pods naming a RuntimeClass are rejected at admission unless it exists.
  await cp.kubeConfig.makeApiClient(NodeV1Api).createRuntimeClass({ body: { metadata: { name: 'gvisor' }, handler: 'runsc' } });
  stopBinder = startPodBinder(cp, namespace, (pod) => pod.spec?.containers[0]?.image !== NEVER_READY_IMAGE);
  const specsFile = path.join(tmp, 'specs.json');
  fs.writeFileSync(
    specsFile,
    JSON.stringify([
      { id: IMAGE, command: ['--port', '8000'], initial_env: { LOG_JSON: 'true' }, working_dir: '/workspace/project' },
      { id: NEVER_READY_IMAGE, command: ['--port', '8000'] },
    ]),
  );
  env = {
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: encryptionKey,
    SANDBOX_RUNTIME: 'kubernetes',
    SANDBOX_K8S_KUBECONFIG: path.join(cp.runDir, 'kubeconfig'),
    SANDBOX_K8S_NAMESPACE: namespace,
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_K8S_STORAGE_CLASS: 'fast',
    SANDBOX_K8S_NODE_SELECTOR: 'pool=sandboxes',
    SANDBOX_K8S_TOLERATIONS: '[{"key":"sandbox","operator":"Exists","effect":"NoSchedule"}]',
    SANDBOX_K8S_IMAGE_PULL_SECRET: 'registry-creds',
    SANDBOX_K8S_RUNTIME_CLASS: 'gvisor',
    SANDBOX_DOMAIN: 'sandboxes.example.com',
    SANDBOX_MAX_RUNNING_PER_USER: '3',
    SANDBOX_STARTUP_TIMEOUT_MS: '4000',
  };
  app = await startTestApp('k8s', env);
  key = await app.keyFor('kate');
}, 15 * 60_000);

afterAll(async () => {
  stopBinder?.();
  await app?.stop();
  await cp?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}, 60_000);

const getSandbox = async (id: string, app_ = app) => (await call(app_, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
const waitForStatus = (id: string, status: string) =>
  eventually(`sandbox ${status}`, async () => {
    const info = await getSandbox(id);
    return info?.status === status ? info : null;
  });

describe('Kubernetes runtime', () => {
  let sandboxId: string;
  let sessionKey: string;

  it('creates the pod, workspace claim, secret, service and ingress with the expected shape', async () => {
    const res = await call(app, 'POST', '/api/v1/sandboxes', { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    sandboxId = res.body.id;
    sessionKey = res.body.session_api_key;
    const name = `sandbox-${sandboxId}`;

    const pod = await core.readNamespacedPod({ namespace, name });
    expect(pod.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'agent-control-plane',
      'agent-control-plane/sandbox-id': sandboxId,
    });
    expect(pod.metadata?.annotations).toMatchObject({ 'agent-control-plane/owner': 'kate', 'agent-control-plane/spec': IMAGE });
    const spec = pod.spec!;
    const container = spec.containers[0]!;
    expect(container.image).toBe(IMAGE);
    expect(container.args).toEqual(['--port', '8000']);
    expect(container.env).toEqual([
      { name: 'LOG_JSON', value: 'true' },
      { name: 'AGENT_SERVER_PORT', value: '8000' },
      // The worker and VS Code ports, named as the reference's Docker sandboxes name them.
      { name: 'WORKER_1', value: '8011' },
      { name: 'WORKER_2', value: '8012' },
      { name: 'VSCODE', value: '8001' },
      { name: 'OH_VSCODE_PORT', value: '8001' },
      { name: 'OH_SESSION_API_KEYS_0', valueFrom: { secretKeyRef: { name, key: 'OH_SESSION_API_KEYS_0' } } },
      { name: 'OH_SECRET_KEY', valueFrom: { secretKeyRef: { name, key: 'OH_SECRET_KEY' } } },
      { name: 'OH_WEBHOOKS_0_BASE_URL', valueFrom: { secretKeyRef: { name, key: 'OH_WEBHOOKS_0_BASE_URL' } } },
      // The browser origins (the service on 127.0.0.1: both spellings of localhost), not secret.
      { name: 'OH_ALLOW_CORS_ORIGINS_0', value: app.url },
      { name: 'OH_ALLOW_CORS_ORIGINS_1', value: app.url.replace('127.0.0.1', 'localhost') },
      // One agent server per workspace: no conversation leases (src/sandbox/runtime.ts).
      { name: 'OH_LEASE_TTL_SECONDS', value: '0' },
    ]);
    expect(JSON.stringify(spec)).not.toContain(sessionKey);
    // The SANDBOX_K8S_* defaults (the spec sets no limits); its disk is the claim's size too.
    expect(container.resources).toEqual({
      requests: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '2Gi' },
      limits: { memory: '2Gi', 'ephemeral-storage': '2Gi' },
    });
    expect(container.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(spec.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 10001,
      fsGroup: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.nodeSelector).toEqual({ pool: 'sandboxes' });
    // (the DefaultTolerationSeconds admission plugin adds its own not-ready/unreachable ones)
    expect(spec.tolerations).toContainEqual(expect.objectContaining({ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }));
    expect(spec.imagePullSecrets).toEqual([{ name: 'registry-creds' }]);
    expect(spec.runtimeClassName).toBe('gvisor');
    expect(container.volumeMounts).toEqual([{ name: 'workspace', mountPath: '/workspace' }]);
    expect(spec.volumes?.[0]?.persistentVolumeClaim?.claimName).toBe(`${name}-workspace`);

    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name}-workspace` });
    expect(claim.spec).toMatchObject({
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast',
      resources: { requests: { storage: '2Gi' } },
    });

    const secret = await core.readNamespacedSecret({ namespace, name });
    const decoded = Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(decoded).toEqual({
      OH_SESSION_API_KEYS_0: sessionKey,
      // What the agent server seals its stored secrets with: its own key, kept across resumes.
      OH_SECRET_KEY: expect.stringMatching(/^[0-9A-Za-z]{43}$/),
      OH_WEBHOOKS_0_BASE_URL: `${app.url}/api/v1/webhooks/${sandboxId}`,
    });
    expect(decoded.OH_SECRET_KEY).not.toBe(sessionKey);

    expect(container.ports).toEqual([
      { name: 'agent-server', containerPort: 8000, protocol: 'TCP' },
      { name: 'vscode', containerPort: 8001, protocol: 'TCP' },
      { name: 'worker-1', containerPort: 8011, protocol: 'TCP' },
      { name: 'worker-2', containerPort: 8012, protocol: 'TCP' },
    ]);

    const ingress = await cp.kubeConfig.makeApiClient(NetworkingV1Api).readNamespacedIngress({ namespace, name });
    const rule = (host: string, port: number) => ({
      host,
      http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: port } } } }] },
    });
    expect(ingress.spec?.rules).toEqual([
      rule(`${sandboxId}.sandboxes.example.com`, 8000),
      rule(`vscode-${sandboxId}.sandboxes.example.com`, 8001),
      rule(`work-1-${sandboxId}.sandboxes.example.com`, 8011),
      rule(`work-2-${sandboxId}.sandboxes.example.com`, 8012),
    ]);

    const service = await core.readNamespacedService({ namespace, name });
    expect(service.spec?.selector).toEqual({ 'agent-control-plane/sandbox-id': sandboxId });
    expect(service.spec?.clusterIP).toBe('None'); // headless: the name resolves to the pod
    expect(service.spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['agent-server', 8000, 'agent-server'],
      ['vscode', 8001, 'vscode'],
      ['worker-1', 8011, 'worker-1'],
      ['worker-2', 8012, 'worker-2'],
    ]);
  });

  it('follows the pod to RUNNING and exposes the ingress hosts: AGENT_SERVER, VSCODE with its token, WORKER_1/2', async () => {
    const running = await waitForStatus(sandboxId, 'RUNNING');
    expect(running.exposed_urls).toEqual([
      { name: 'AGENT_SERVER', url: `https://${sandboxId}.sandboxes.example.com` },
      { name: 'VSCODE', url: `https://vscode-${sandboxId}.sandboxes.example.com/?tkn=${sessionKey}&folder=/workspace/project` },
      { name: 'WORKER_1', url: `https://work-1-${sandboxId}.sandboxes.example.com` },
      { name: 'WORKER_2', url: `https://work-2-${sandboxId}.sandboxes.example.com` },
    ]);
  });

  it('pauses by deleting the pod and keeping the workspace, and resumes on the same claim', async () => {
    const name = `sandbox-${sandboxId}`;
    expect((await call(app, 'POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key })).status).toBe(200);
    await eventually('pod deleted', async () => !(await exists(() => core.readNamespacedPod({ namespace, name }))));
    expect(await exists(() => core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name}-workspace` }))).toBe(true);
    expect((await getSandbox(sandboxId)).status).toBe('PAUSED');

    const secretOf = async () => {
      const data = (await core.readNamespacedSecret({ namespace, name })).data ?? {};
      return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    };
    const before = await secretOf();
    expect((await call(app, 'POST', `/api/v1/sandboxes/${sandboxId}/resume`, { key })).status).toBe(200);
    await waitForStatus(sandboxId, 'RUNNING');
    const pod = await core.readNamespacedPod({ namespace, name });
    expect(pod.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName).toBe(`${name}-workspace`);
    // A new session key for the resumed pod (the API shows it), the same sealing key.
    const after = await secretOf();
    expect(after.OH_SESSION_API_KEYS_0).not.toBe(before.OH_SESSION_API_KEYS_0);
    expect(after.OH_SESSION_API_KEYS_0).toBe((await getSandbox(sandboxId)).session_api_key);
    expect(after.OH_SECRET_KEY).toBe(before.OH_SECRET_KEY);
  });

  it('agrees with a second service instance on the same database and cluster', async () => {
    const second = await startTestApp('k8s-second', env);
    try {
      const seen = (await call(second, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body[0];
      expect(seen).toMatchObject({ id: sandboxId, status: 'RUNNING' });
    } finally {
      await second.stop({ keepSandboxes: true });
    }
  });

  it('answers 503 while the API server is down and recovers the true status after it returns', async () => {
    await cp.stopApiServer();
    try {
      const down = await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key });
      expect(down.status).toBe(503);
      expect(down.body.detail).toMatch(/^Kubernetes API unavailable/);
      const start = await call(app, 'POST', '/api/v1/sandboxes', { key });
      expect(start.status).toBe(503);
    } finally {
      await cp.startApiServer();
    }
    await waitForStatus(sandboxId, 'RUNNING');
    // The failed start left nothing behind: one record, one set of objects.
    expect(await app.rawCollection('sandboxes').countDocuments({ userId: 'kate' })).toBe(1);
    const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/managed-by=agent-control-plane' });
    expect(pods.items.map((p) => p.metadata?.name)).toEqual([`sandbox-${sandboxId}`]);
  });

  it('cleans up what a failed start created (pod rejected after secret, claim and service exist)', async () => {
    const broken = await startTestApp('k8s-broken', { ...env, SANDBOX_K8S_RUNTIME_CLASS: 'no-such-class' });
    try {
      const brokenKey = await broken.keyFor('broken-user');
      const res = await call(broken, 'POST', '/api/v1/sandboxes', { key: brokenKey });
      expect(res.status).toBe(503);
      expect(res.body.detail).toContain('RuntimeClass');
      expect(await broken.rawCollection('sandboxes').countDocuments({ userId: 'broken-user' })).toBe(0);
      const selector = 'app.kubernetes.io/managed-by=agent-control-plane';
      const [secrets, claims, services] = await Promise.all([
        core.listNamespacedSecret({ namespace, labelSelector: selector }),
        core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector: selector }),
        core.listNamespacedService({ namespace, labelSelector: selector }),
      ]);
      const owners = [...secrets.items, ...claims.items, ...services.items].map(
        (o) => o.metadata?.annotations?.['agent-control-plane/owner'],
      );
      expect(owners).not.toContain('broken-user');
    } finally {
      await broken.stop({ keepSandboxes: true });
    }
  });

  it('reads MISSING when the objects vanish behind its back', async () => {
    const other = (await call(app, 'POST', '/api/v1/sandboxes', { key })).body.id as string;
    await waitForStatus(other, 'RUNNING');
    await core.deleteNamespacedPod({ namespace, name: `sandbox-${other}`, gracePeriodSeconds: 0 });
    const missing = await waitForStatus(other, 'MISSING');
    expect(missing.status_reason).toBe('The sandbox pod no longer exists');
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${other}`, { key })).status).toBe(200);
  });

  it('deletes every object of the sandbox', async () => {
    const name = `sandbox-${sandboxId}`;
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key })).status).toBe(200);
    await eventually('objects gone', async () => {
      const left = await Promise.all([
        exists(() => core.readNamespacedPod({ namespace, name })),
        exists(() => core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name}-workspace` })),
        exists(() => core.readNamespacedSecret({ namespace, name })),
        exists(() => core.readNamespacedService({ namespace, name })),
      ]);
      return left.every((x) => !x);
    });
    expect(await getSandbox(sandboxId)).toBeNull();
  });
});

describeSandboxContract('kubernetes', () => {
  const claimUid = new Map<string, string | undefined>();
  const readClaim = (id: string) => core.readNamespacedPersistentVolumeClaim({ namespace, name: `sandbox-${id}-workspace` });
  return {
    app,
    healthySpec: IMAGE,
    neverHealthySpec: NEVER_READY_IMAGE,
    maxRunning: 3,
    // kwok runs no containers, so no file can be written; the evidence is that the very same
    // claim (same uid) survives the pause and is mounted by the resumed pod.
    markWorkspace: async (id) => {
      claimUid.set(id, (await readClaim(id)).metadata?.uid);
    },
    workspaceMarked: async (id) => {
      const pod = await core.readNamespacedPod({ namespace, name: `sandbox-${id}` });
      const mounted = pod.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName === `sandbox-${id}-workspace`;
      return mounted && (await readClaim(id)).metadata?.uid === claimUid.get(id);
    },
  };
});
