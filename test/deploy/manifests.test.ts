// The deployment manifests against a real kube-apiserver (RBAC and pod security on):
// every manifest passes a server-side dry run, and the Kubernetes sandbox runtime works as
// the manifests' ServiceAccount, with a token bound to it, while anything outside its Role
// is refused.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiException, CoreV1Api, KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { createLogger } from '../../src/logger.js';
import { KubernetesSandboxRuntime } from '../../src/sandbox/kubernetes-runtime.js';
import { eventually } from '../helpers/eventually.js';
import { kubernetesOptions } from '../helpers/kubernetes-options.js';
import { startKubeControlPlane, startPodBinder, type KubeControlPlane } from '../helpers/kube-control-plane.js';

const K8S_DIR = path.join(PACKAGE_ROOT, 'k8s');
let cp: KubeControlPlane;
let admin: KubernetesObjectApi;
let stopBinder: () => void;

/** The resources a kustomization lists, recursively (our kustomizations only use `resources`). */
function kustomize(dir: string): KubernetesObject[] {
  const kustomization = parseYaml(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
  return kustomization.resources.flatMap((resource) => {
    const target = path.join(dir, resource);
    if (fs.statSync(target).isDirectory()) return kustomize(target);
    return parseAllDocuments(fs.readFileSync(target, 'utf8'))
      .map((d) => d.toJSON() as KubernetesObject | null)
      .filter((d): d is KubernetesObject => Boolean(d));
  });
}

const base = kustomize(K8S_DIR);
const trial = kustomize(path.join(K8S_DIR, 'overlays', 'trial'));
const ofKind = (kind: string) => base.filter((d) => d.kind === kind);

beforeAll(async () => {
  cp = await startKubeControlPlane();
  admin = KubernetesObjectApi.makeApiClient(cp.kubeConfig);
  // Namespaces for real: namespaced objects cannot be dry-run into a missing namespace.
  for (const ns of ofKind('Namespace')) await admin.create(ns);
  stopBinder = startPodBinder(cp, 'agent-sandboxes');
}, 15 * 60_000);

afterAll(async () => {
  stopBinder?.();
  await cp?.stop();
}, 60_000);

describe('k8s/ manifests', () => {
  it('lists every manifest file of k8s/ except the secret template', () => {
    const listed = (parseYaml(fs.readFileSync(path.join(K8S_DIR, 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources;
    const files = fs.readdirSync(K8S_DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'secret.example.yaml');
    expect([...listed].sort()).toEqual(files.sort());
  });

  it('agrees with kubectl kustomize where kubectl is installed', () => {
    let rendered: string;
    try {
      rendered = execFileSync('kubectl', ['kustomize', K8S_DIR], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      console.warn('kubectl not installed: the kustomization was read by the test itself only');
      return;
    }
    const names = (docs: KubernetesObject[]) => docs.map((d) => `${d.kind}/${d.metadata?.namespace ?? ''}/${d.metadata?.name}`).sort();
    const fromKubectl = parseAllDocuments(rendered).map((d) => d.toJSON() as KubernetesObject);
    expect(names(fromKubectl)).toEqual(names(base));
  });

  it.each(
    [...base, ...trial.filter((d) => !base.some((b) => b.kind === d.kind && b.metadata?.name === d.metadata?.name))]
      .filter((d) => d.kind !== 'Namespace')
      .map((d) => [`${d.kind} ${d.metadata?.namespace}/${d.metadata?.name}`, d] as const),
  )('applies %s with a server-side dry run', async (_name, doc) => {
    await expect(admin.create(doc, undefined, 'All')).resolves.toMatchObject({ kind: doc.kind });
  });

  it('keeps the service account out of everything but the sandbox namespace (no ClusterRole)', () => {
    expect(base.filter((d) => d.kind === 'ClusterRole' || d.kind === 'ClusterRoleBinding')).toEqual([]);
    expect(ofKind('Role').map((r) => r.metadata?.namespace)).toEqual(['agent-sandboxes']);
    const deployment = ofKind('Deployment')[0] as unknown as { spec: { replicas: number; template: { spec: Record<string, any> } } };
    expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
    const container = deployment.spec.template.spec.containers[0];
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.readinessProbe.httpGet.path).toBe('/ready');
    expect(container.livenessProbe.httpGet.path).toBe('/alive');
    expect(container.resources.limits).toBeDefined();
  });
});

describe('the Kubernetes runtime as the manifests ServiceAccount', () => {
  let sa: KubeConfig;

  beforeAll(async () => {
    for (const kind of ['ServiceAccount', 'Role', 'RoleBinding']) for (const doc of ofKind(kind)) await admin.create(doc);
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const token = await core.createNamespacedServiceAccountToken({
      name: 'agent-control-plane',
      namespace: 'agent-control-plane',
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    sa = new KubeConfig();
    sa.loadFromOptions({
      clusters: [{ name: 'local', server: cp.server, skipTLSVerify: true }],
      users: [{ name: 'sa', token: token.status!.token }],
      contexts: [{ name: 'local', cluster: 'local', user: 'sa' }],
      currentContext: 'local',
    });
  });

  const options = kubernetesOptions({ namespace: 'agent-sandboxes', domain: 'sandboxes.example.com' });

  it('has restricted pod security enforced in the sandbox namespace (so the lifecycle below proves compliance)', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const rootPod = {
      metadata: { name: 'root-pod' },
      spec: { containers: [{ name: 'x', image: 'x', securityContext: { privileged: true } }] },
    };
    const refused = await core.createNamespacedPod({ namespace: 'agent-sandboxes', body: rootPod }).then(
      () => null,
      (e: ApiException<string>) => e,
    );
    expect(refused?.code).toBe(403);
    expect((JSON.parse(String(refused?.body)) as { message: string }).message).toContain('violates PodSecurity "restricted');
  });

  it('runs a whole sandbox lifecycle, reconciler listing included, under restricted pod security', async () => {
    const runtime = new KubernetesSandboxRuntime(sa, options, 60_000, createLogger('silent'));
    const launch = {
      sandboxId: 'aaaabbbbccccddddeeeeffff00001111',
      userId: 'rbac-user',
      spec: { id: 'ghcr.io/openhands/agent-server:test', command: ['--port', '8000'], initial_env: {}, working_dir: '/workspace/project' },
      sessionApiKey: 'session-key-for-rbac-test',
      webhookBaseUrl: 'http://agent-control-plane.agent-control-plane.svc.cluster.local/api/v1/webhooks/x',
      corsOrigins: ['https://agents.example.com'],
    };
    try {
      await runtime.start(launch);
      await eventually('RUNNING', async () => (await runtime.state(launch.sandboxId, 'running')).status === 'RUNNING');
      await runtime.pause(launch.sandboxId);
      await eventually('PAUSED', async () => (await runtime.state(launch.sandboxId, 'paused')).status === 'PAUSED');
      expect(await runtime.list()).toEqual([launch.sandboxId]); // the reconciler's listing: the claim is kept
      await runtime.resume(launch);
      await eventually('RUNNING again', async () => (await runtime.state(launch.sandboxId, 'running')).status === 'RUNNING');
      await runtime.remove(launch.sandboxId);
      await eventually('gone', async () => (await runtime.state(launch.sandboxId, 'running')).status === 'MISSING');
      expect(await runtime.list()).toEqual([]);
    } finally {
      await runtime.close();
    }
  });

  it.each([
    ['list pods in another namespace', (core: CoreV1Api) => core.listNamespacedPod({ namespace: 'default' })],
    ['read the service namespace secrets', (core: CoreV1Api) => core.listNamespacedSecret({ namespace: 'agent-control-plane' })],
    ['read secrets in the sandbox namespace', (core: CoreV1Api) => core.listNamespacedSecret({ namespace: 'agent-sandboxes' })],
    ['list pods across the cluster', (core: CoreV1Api) => core.listPodForAllNamespaces()],
    [
      'create a pod in the service namespace',
      (core: CoreV1Api) =>
        core.createNamespacedPod({
          namespace: 'agent-control-plane',
          body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'x', image: 'x' }] } },
        }),
    ],
  ])('is refused to %s', async (_what, attempt) => {
    const error = await attempt(sa.makeApiClient(CoreV1Api)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiException);
    expect((error as ApiException<unknown>).code).toBe(403);
  });
});
