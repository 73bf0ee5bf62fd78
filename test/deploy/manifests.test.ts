// The deployment manifests as kubectl sees them: every kustomize target under k8s/ (the base
// and each overlay) is rendered by the real `kubectl kustomize` (built by scripts/build-kube.sh,
// the API server's version) and applied with `kubectl apply --dry-run=server` against a real
// kube-apiserver (RBAC and pod security on). The Kubernetes sandbox runtime then works as the
// manifests' ServiceAccount, with a token bound to it, while anything outside its Role is refused.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { BlockList } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  type KubernetesObject,
  type V1NetworkPolicy,
  type V1NetworkPolicyEgressRule,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/config.js';
import { generateKeyText } from '../../src/crypto.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { createLogger } from '../../src/logger.js';
import { buildPod } from '../../src/sandbox/kubernetes/kubernetes-objects.js';
import { KubernetesSandboxRuntime } from '../../src/sandbox/kubernetes/kubernetes-runtime.js';
import { eventually } from '../helpers/eventually.js';
import { kubernetesOptions } from '../helpers/kubernetes-options.js';
import { buildKube, startKubeControlPlane, startPodBinder, type KubeControlPlane } from '../helpers/kube-control-plane.js';

const K8S_DIR = path.join(PACKAGE_ROOT, 'k8s');
const KUBECTL = path.join(await buildKube(), 'kubectl');
let cp: KubeControlPlane;
let admin: KubernetesObjectApi;
let stopBinder: () => void;

/** Every folder under k8s/ holding a kustomization.yaml, relative to k8s/. */
function kustomizeTargets(dir = K8S_DIR): string[] {
  const here = fs.existsSync(path.join(dir, 'kustomization.yaml')) ? [path.relative(K8S_DIR, dir)] : [];
  const below = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => kustomizeTargets(path.join(dir, entry.name)));
  return [...here, ...below].sort();
}

const documents = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as KubernetesObject | null)
    .filter((d): d is KubernetesObject => Boolean(d));

/** What `kubectl apply -k k8s/<target>` would send. Throws with kubectl's message if it cannot render. */
const render = (target: string) => documents(execFileSync(KUBECTL, ['kustomize', path.join(K8S_DIR, target)], { encoding: 'utf8' }));

const TARGETS = kustomizeTargets();
const rendered = new Map(TARGETS.map((target) => [target, render(target)]));
const base = rendered.get('base') ?? [];
const ofKind = (kind: string) => base.filter((d) => d.kind === kind);
const nameOf = (d: KubernetesObject) => `${d.kind}/${d.metadata?.namespace ?? ''}/${d.metadata?.name}`;
const names = (docs: KubernetesObject[]) => docs.map(nameOf).sort();

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

describe('k8s/ kustomize targets, rendered by kubectl', () => {
  it('are the base, the automations overlay and the trial overlay', () => {
    expect(TARGETS).toEqual(['base', 'overlays/automations', 'overlays/trial']);
  });

  it.each(TARGETS)('%s renders every manifest file of its folder', (target) => {
    const folder = path.join(K8S_DIR, target);
    const files = fs.readdirSync(folder).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    const fromFiles = files.flatMap((f) => documents(fs.readFileSync(path.join(folder, f), 'utf8')));
    expect(fromFiles.length).toBeGreaterThan(0);
    expect(names(rendered.get(target)!)).toEqual(expect.arrayContaining(names(fromFiles)));
  });

  it('the trial overlay is the base, unchanged, plus a MongoDB replica set', () => {
    const trial = rendered.get('overlays/trial')!;
    const added = trial.filter((d) => !base.some((b) => nameOf(b) === nameOf(d)));
    expect(names(added)).toEqual([
      'Job/agent-control-plane/mongodb-init-replica-set',
      'Service/agent-control-plane/mongodb',
      'StatefulSet/agent-control-plane/mongodb',
    ]);
    for (const object of base) expect(trial.find((d) => nameOf(d) === nameOf(object))).toEqual(object);
  });

  it.each(TARGETS)('%s names the namespace of every namespaced object and holds no Secret', (target) => {
    const objects = rendered.get(target)!;
    expect(objects.filter((d) => d.kind === 'Secret').map(nameOf)).toEqual([]); // created by hand (k8s/secret.example.yaml)
    const elsewhere = objects.filter(
      (d) => d.kind !== 'Namespace' && !/^agent-(control-plane|sandboxes)$/.test(d.metadata?.namespace ?? ''),
    );
    expect(elsewhere.map(nameOf)).toEqual([]);
  });

  it.each(TARGETS)('%s passes kubectl apply --dry-run=server with strict field validation', async (target) => {
    const { stdout } = await promisify(execFile)(KUBECTL, [
      'apply',
      '--kubeconfig',
      cp.kubeconfigFile,
      '--cache-dir',
      path.join(cp.runDir, 'kubectl-cache'), // not ~/.kube
      '--dry-run=server',
      '--validate=strict',
      '-k',
      path.join(K8S_DIR, target),
      '-o',
      'name',
    ]);
    // `-o name` prints <kind>.<group>/<name> per object it would apply.
    const applied = stdout
      .trim()
      .split('\n')
      .map((line) => line.replace(/^([^./]+)(\.[^/]*)?\//, '$1/'));
    expect(applied.sort()).toEqual(
      rendered
        .get(target)!
        .map((d) => `${d.kind!.toLowerCase()}/${d.metadata?.name}`)
        .sort(),
    );
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

/** Whether a connection to this address leaves by some ipBlock of these rules (in its cidr, in none of its excepts). */
function leavesByIpBlock(rules: V1NetworkPolicyEgressRule[], address: string): boolean {
  const within = (cidr: string) => {
    const [network, bits] = cidr.split('/') as [string, string];
    const family = network.includes(':') ? 'ipv6' : 'ipv4';
    const list = new BlockList();
    list.addSubnet(network, Number(bits), family);
    return address.includes(':') === (family === 'ipv6') && list.check(address, family);
  };
  const blocks = rules.flatMap((rule) => (rule.to ?? []).flatMap((peer) => (peer.ipBlock ? [peer.ipBlock] : [])));
  return blocks.some((block) => within(block.cidr) && !(block.except ?? []).some(within));
}

describe('the sandbox network and pod security, in every kustomize target', () => {
  const find = (target: string, kind: string, name: string) =>
    rendered.get(target)!.find((d) => d.kind === kind && d.metadata?.name === name) as any;
  const policy = (target: string, name: string) => find(target, 'NetworkPolicy', name) as V1NetworkPolicy | undefined;
  const labelled = (labels: Record<string, string>) => ({ matchLabels: labels });
  const inNamespace = (name: string) => labelled({ 'kubernetes.io/metadata.name': name });

  it.each(TARGETS)('%s lets sandbox pods reach only DNS, the control plane pods and the public internet', (target) => {
    const egress = policy(target, 'sandboxes-egress');
    expect(egress?.metadata?.namespace).toBe('agent-sandboxes');
    expect(egress?.spec?.policyTypes).toEqual(['Egress']);
    const [dns, controlPlane, internet, ...more] = egress?.spec?.egress ?? [];
    expect(more).toEqual([]);
    const port53 = ['UDP', 'TCP'].map((protocol) => ({ port: 53, protocol }));
    expect(dns).toEqual({
      to: [{ namespaceSelector: inNamespace('kube-system'), podSelector: labelled({ 'k8s-app': 'kube-dns' }) }],
      ports: port53,
    });
    // The control plane as its Deployment runs it: its pods' labels, the port its Service targets.
    const deployment = find(target, 'Deployment', 'agent-control-plane');
    const service = find(target, 'Service', 'agent-control-plane');
    const port = deployment.spec.template.spec.containers[0].ports.find((p: any) => p.name === service.spec.ports[0].targetPort);
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    expect(controlPlane).toEqual({
      to: [{ namespaceSelector: inNamespace('agent-control-plane'), podSelector: labelled(service.spec.selector) }],
      ports: [{ port: port.containerPort, protocol: 'TCP' }],
    });
    // Any port, to any address outside the excepts (their order means nothing to Kubernetes).
    expect(Object.keys(internet!)).toEqual(['to']);
    expect(internet!.to!.map((peer) => [peer.ipBlock?.cidr, [...(peer.ipBlock?.except ?? [])].sort().join(' ')])).toEqual([
      ['0.0.0.0/0', '10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 169.254.169.254/32 172.16.0.0/12 192.168.0.0/16'],
      ['::/0', 'fc00::/7 fd00:ec2::254/128 fe80::/10'],
    ]);
  });

  it.each(TARGETS)('%s keeps cloud metadata, link-local, private and loopback addresses out of the open rule', (target) => {
    const rules = policy(target, 'sandboxes-egress')?.spec?.egress ?? [];
    // Metadata (AWS/GCP/Azure, ECS task credentials, AWS over IPv6, Alibaba's in the shared range),
    // link-local, a typical cluster's pods, services and nodes, private networks, loopback.
    const closed = ['169.254.169.254', '169.254.170.2', 'fd00:ec2::254', '100.100.100.200', 'fe80::1', '10.96.0.1', '172.17.0.1'];
    closed.push('192.168.1.10', 'fd12:3456::1', '127.0.0.1');
    expect(closed.filter((address) => leavesByIpBlock(rules, address))).toEqual([]);
    const open = ['140.82.112.3', '1.1.1.1', '2606:4700:4700::1111'];
    expect(open.filter((address) => leavesByIpBlock(rules, address))).toEqual(open);
  });

  it.each(TARGETS)(
    '%s selects the pods the runtime builds, denies the rest egress, keeps ingress closed, enforces restricted',
    (target) => {
      const launch = { sandboxId: 'x', userId: 'u', sessionApiKey: 'k', secretKey: 'sealing-key', webhookBaseUrl: 'http://w' };
      const spec = { id: 'i', command: null, initial_env: {}, working_dir: '/w' };
      const selector = policy(target, 'sandboxes-egress')?.spec?.podSelector;
      expect(selector).toEqual(
        labelled({ 'app.kubernetes.io/managed-by': 'agent-control-plane', 'app.kubernetes.io/component': 'sandbox' }),
      );
      expect(buildPod({ ...launch, spec }, kubernetesOptions()).metadata?.labels).toMatchObject(selector!.matchLabels!);
      expect(find(target, 'ConfigMap', 'agent-control-plane').data.SANDBOX_K8S_NAMESPACE).toBe('agent-sandboxes');
      expect(policy(target, 'default-deny-egress')?.spec).toEqual({ podSelector: {}, policyTypes: ['Egress'] });
      expect(policy(target, 'default-deny-ingress')?.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
      expect(policy(target, 'sandboxes-ingress-from-control-plane')?.spec?.policyTypes).toEqual(['Ingress']);
      const levels = ['enforce', 'audit', 'warn'].map((mode) => [`pod-security.kubernetes.io/${mode}`, 'restricted']);
      expect(find(target, 'Namespace', 'agent-sandboxes').metadata.labels).toMatchObject(Object.fromEntries(levels));
    },
  );
});

describe('the automations overlay (docs/automation-service-notes.md)', () => {
  const overlay = rendered.get('overlays/automations') ?? [];
  const find = (kind: string, name: string) => overlay.find((d) => d.kind === kind && d.metadata?.name === name) as any;
  const podSpec = (kind: string, name: string) => find(kind, name).spec.template.spec;
  const envOf = (kind: string, name: string) =>
    Object.fromEntries(podSpec(kind, name).containers[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
  /** The container port a Service sends to (its first port's target, by name). */
  const targetOf = (service: string, kind: string, workload: string) =>
    podSpec(kind, workload).containers[0].ports.find((p: any) => p.name === find('Service', service).spec.ports[0].targetPort)
      .containerPort;
  const dnsOf = (service: string) => `${service}.agent-control-plane.svc.cluster.local`;
  const ingressOf = (policy: string, namespace = 'agent-control-plane') => {
    const found = overlay.find(
      (d) => d.kind === 'NetworkPolicy' && d.metadata?.name === policy && d.metadata.namespace === namespace,
    ) as any;
    return found.spec;
  };

  it('is the base, its ConfigMap naming the automation service, plus the service, its PostgreSQL and their policies', () => {
    const added = overlay.filter((d) => !base.some((b) => nameOf(b) === nameOf(d)));
    expect(names(added)).toEqual([
      'Deployment/agent-control-plane/automation',
      'NetworkPolicy/agent-control-plane/automation-ingress',
      'NetworkPolicy/agent-control-plane/automation-postgres-ingress',
      'NetworkPolicy/agent-sandboxes/sandboxes-ingress-from-automation',
      'PersistentVolumeClaim/agent-control-plane/automation-data',
      'Service/agent-control-plane/automation',
      'Service/agent-control-plane/automation-postgres',
      'StatefulSet/agent-control-plane/automation-postgres',
    ]);
    const configMap = find('ConfigMap', 'agent-control-plane');
    for (const object of base.filter((b) => b !== ofKind('ConfigMap')[0]))
      expect(overlay.find((d) => nameOf(d) === nameOf(object))).toEqual(object);
    expect(configMap.data).toEqual({ ...(ofKind('ConfigMap')[0] as any).data, AUTOMATION_URL: `http://${dnsOf('automation')}` });
  });

  it("makes a configuration the service starts with (given the Secret's keys), forwarding to the automation service", () => {
    const config = loadConfig({
      ...find('ConfigMap', 'agent-control-plane').data,
      MONGODB_URI: 'mongodb://mongo:27017/acp',
      ENCRYPTION_KEY: generateKeyText(),
      AUTOMATION_SERVICE_KEY: 'k'.repeat(32),
    });
    expect(config.automations).toMatchObject({ url: `http://${dnsOf('automation')}`, embedded: null });
  });

  it('wires the automation service to the control plane, its database and the runs, and no one else to it', () => {
    const env = envOf('Deployment', 'automation');
    const controlPlane = `http://${dnsOf('agent-control-plane')}`;
    expect(find('Service', 'agent-control-plane').spec.ports[0].port).toBe(80);
    // Cloud mode against the control plane, and runs report to it (what the sandboxes may reach).
    expect(env).toMatchObject({ AUTOMATION_OPENHANDS_API_BASE_URL: controlPlane, AUTOMATION_BASE_URL: controlPlane });
    expect(env.AUTOMATION_AGENT_SERVER_URL).toBeUndefined();
    expect(find('ConfigMap', 'agent-control-plane').data.WEB_URL).toBe(controlPlane);
    // Its key is the control plane's, from the one Secret; the database password is referenced, never written.
    expect(env.AUTOMATION_SERVICE_KEY).toEqual({ secretKeyRef: { name: 'agent-control-plane', key: 'AUTOMATION_SERVICE_KEY' } });
    const database = new URL(env.AUTOMATION_DB_URL.replace('$(POSTGRES_PASSWORD)', 'p'));
    expect([database.protocol, database.hostname, Number(database.port)]).toEqual([
      'postgresql+asyncpg:',
      dnsOf('automation-postgres'),
      find('Service', 'automation-postgres').spec.ports[0].port,
    ]);
    const names = podSpec('Deployment', 'automation').containers[0].env.map((e: any) => e.name);
    expect(names.indexOf('POSTGRES_PASSWORD')).toBeLessThan(names.indexOf('AUTOMATION_DB_URL')); // $(…) expands only earlier variables
    expect(envOf('StatefulSet', 'automation-postgres').POSTGRES_PASSWORD).toEqual(env.POSTGRES_PASSWORD);
    // Who may connect: the control plane's pods to the automation service, it alone to its database.
    const controlPlaneLabels = find('Deployment', 'agent-control-plane').spec.template.metadata.labels;
    const automationLabels = find('Deployment', 'automation').spec.template.metadata.labels;
    expect(ingressOf('automation-ingress')).toEqual({
      podSelector: { matchLabels: automationLabels },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: controlPlaneLabels } }],
          ports: [{ port: targetOf('automation', 'Deployment', 'automation'), protocol: 'TCP' }],
        },
      ],
    });
    expect(ingressOf('automation-postgres-ingress')).toMatchObject({
      podSelector: { matchLabels: find('StatefulSet', 'automation-postgres').spec.template.metadata.labels },
      ingress: [
        {
          from: [{ podSelector: { matchLabels: automationLabels } }],
          ports: [{ port: targetOf('automation-postgres', 'StatefulSet', 'automation-postgres'), protocol: 'TCP' }],
        },
      ],
    });
    // The automation service reaches runs' agent servers as the control plane does: the same pods, the same port.
    const sandboxes = ingressOf('sandboxes-ingress-from-control-plane', 'agent-sandboxes');
    const fromAutomation = ingressOf('sandboxes-ingress-from-automation', 'agent-sandboxes');
    expect(fromAutomation.podSelector).toEqual(sandboxes.podSelector);
    expect(fromAutomation.ingress[0].ports).toEqual(sandboxes.ingress[0].ports);
    expect(fromAutomation.ingress[0].from).toEqual([
      { namespaceSelector: sandboxes.ingress[0].from[0].namespaceSelector, podSelector: { matchLabels: automationLabels } },
    ]);
  });

  it.each([
    ['Deployment', 'automation'],
    ['StatefulSet', 'automation-postgres'],
  ])("%s %s's pods pass the namespace's restricted pod security (server dry run)", async (kind, name) => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const { template, volumeClaimTemplates = [] } = find(kind, name).spec;
    // A StatefulSet's claims become volumes of its pods: stood in for by empty folders.
    const claimed = volumeClaimTemplates.map((claim: any) => ({ name: claim.metadata.name, emptyDir: {} }));
    const spec = { ...template.spec, volumes: [...(template.spec.volumes ?? []), ...claimed] };
    const pod = { metadata: { name: `${name}-check`, labels: template.metadata.labels }, spec };
    await expect(core.createNamespacedPod({ namespace: 'agent-control-plane', body: pod, dryRun: 'All' })).resolves.toBeDefined();
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
      secretKey: 'sealing-key',
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
