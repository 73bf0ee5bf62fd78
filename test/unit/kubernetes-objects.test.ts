import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  buildIngress,
  buildPod,
  buildSecret,
  buildService,
  buildWorkspaceClaim,
  podExposedUrls,
  slimPod,
} from '../../src/sandbox/kubernetes/kubernetes-objects.js';
import { kubernetesOptions } from '../helpers/kubernetes-options.js';
import { podStatus } from '../../src/sandbox/kubernetes/kubernetes-runtime.js';
import type { SandboxLaunch, SandboxSpec } from '../../src/sandbox/runtime.js';

const launch: SandboxLaunch = {
  sandboxId: 'abc123',
  userId: 'user@example.com',
  spec: { id: 'img:1', command: null, initial_env: {}, working_dir: '/workspace/project' },
  sessionApiKey: 'session-secret',
  secretKey: 'sealing-key',
  webhookBaseUrl: 'http://svc/api/v1/webhooks/abc123',
  corsOrigins: ['https://ui.example.com', 'https://next.example.com'],
};
const noVscode = { ...launch, spec: { ...launch.spec, initial_env: { OH_ENABLE_VSCODE: 'false' } } };
const options = kubernetesOptions({ cpuRequest: '500m', memoryRequest: '512Mi', cpuLimit: '2', memoryLimit: '1Gi', runAsUser: 1000 });

describe('sandbox pod', () => {
  it('keeps the image CMD when the spec has no command, omits unset options, and never inlines the key', () => {
    const pod = buildPod(launch, options);
    const container = pod.spec!.containers[0]!;
    expect(container.args).toBeUndefined();
    expect(container.resources?.limits).toEqual({ memory: '1Gi', cpu: '2', 'ephemeral-storage': '1Gi' });
    expect(pod.spec).not.toHaveProperty('nodeSelector');
    expect(pod.spec).not.toHaveProperty('runtimeClassName');
    expect(pod.metadata?.annotations?.['agent-control-plane/owner']).toBe('user@example.com');
    expect(JSON.stringify(pod)).not.toContain('session-secret');
  });

  it("passes the browser origins as the agent server's CORS list (OH_ALLOW_CORS_ORIGINS_n)", () => {
    const env = buildPod(launch, options).spec!.containers[0]!.env!;
    expect(env.filter((e) => e.name.startsWith('OH_ALLOW_CORS_ORIGINS_'))).toEqual([
      { name: 'OH_ALLOW_CORS_ORIGINS_0', value: 'https://ui.example.com' },
      { name: 'OH_ALLOW_CORS_ORIGINS_1', value: 'https://next.example.com' },
    ]);
  });

  it("gives the conversation's secrets to the agent server by reference to its Secret, never over its own names; dormant on deferred init", () => {
    const withEnv = {
      ...launch,
      env: { FINISH_TOKEN: 'tok-123', OH_SECRET_KEY: 'forged', PATH: '/evil', 'not a name': 'x' },
      deferredInit: true,
    };
    const pod = buildPod(withEnv, options);
    const env = pod.spec!.containers[0]!.env!;
    expect(env.find((e) => e.name === 'FINISH_TOKEN')).toEqual({
      name: 'FINISH_TOKEN',
      valueFrom: { secretKeyRef: { name: 'sandbox-abc123', key: 'FINISH_TOKEN' } },
    });
    expect(env.filter((e) => ['PATH', 'not a name'].includes(e.name))).toEqual([]);
    expect(env.find((e) => e.name === 'OH_DEFERRED_INIT')).toEqual({ name: 'OH_DEFERRED_INIT', value: 'true' });
    expect(JSON.stringify(pod)).not.toContain('tok-123');
    const secret = buildSecret(withEnv).stringData!;
    expect(secret).toMatchObject({ FINISH_TOKEN: 'tok-123', OH_SECRET_KEY: 'sealing-key' });
    expect(Object.keys(secret)).not.toContain('PATH');
  });

  it('builds an ingress only with a sandbox domain, one host per exposed port, with TLS when configured', () => {
    expect(buildIngress(launch, options)).toBeNull();
    const ingress = buildIngress(launch, { ...options, domain: 'sb.example.com', ingressTlsSecret: 'tls', ingressClassName: 'nginx' });
    const hosts = ['abc123.sb.example.com', 'vscode-abc123.sb.example.com', 'work-1-abc123.sb.example.com', 'work-2-abc123.sb.example.com'];
    expect(ingress?.spec).toMatchObject({ ingressClassName: 'nginx', tls: [{ hosts, secretName: 'tls' }] });
    expect(ingress?.spec?.rules?.map((r) => [r.host, r.http?.paths[0]?.backend.service?.port?.number])).toEqual([
      [hosts[0], 8000],
      [hosts[1], 8001],
      [hosts[2], 8011],
      [hosts[3], 8012],
    ]);
    const withoutVscode = buildIngress(noVscode, { ...options, domain: 'sb.example.com' });
    expect(withoutVscode?.spec?.rules?.map((r) => r.host)).toEqual([hosts[0], hosts[2], hosts[3]]);
  });

  it('declares the worker ports always and the VS Code port unless the spec turns VS Code off, and names them in the env', () => {
    const container = buildPod(launch, options).spec!.containers[0]!;
    expect(container.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['agent-server', 8000],
      ['vscode', 8001],
      ['worker-1', 8011],
      ['worker-2', 8012],
    ]);
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: 'WORKER_1', value: '8011' },
        { name: 'WORKER_2', value: '8012' },
        { name: 'OH_VSCODE_PORT', value: '8001' },
      ]),
    );
    expect(buildService(launch).spec?.ports?.map((p) => p.name)).toEqual(['agent-server', 'vscode', 'worker-1', 'worker-2']);
    expect(buildService(launch).spec?.clusterIP).toBe('None'); // headless: no cluster IP per sandbox
    const plain = buildPod(noVscode, options).spec!.containers[0]!;
    expect(plain.ports?.map((p) => p.name)).toEqual(['agent-server', 'worker-1', 'worker-2']);
    expect(plain.env?.map((e) => e.name)).not.toContain('OH_VSCODE_PORT');
    expect(buildService(noVscode).spec?.ports?.map((p) => p.name)).toEqual(['agent-server', 'worker-1', 'worker-2']);
  });

  it('exposes the ports a pod declares, as Ingress hosts with a domain and Service URLs without', () => {
    const pod = buildPod(launch, options);
    expect(podExposedUrls(pod, 'abc123', options).map((u) => [u.name, u.url, u.port])).toEqual([
      ['AGENT_SERVER', 'http://sandbox-abc123.ns.svc.cluster.local:8000', 8000],
      ['VSCODE', 'http://sandbox-abc123.ns.svc.cluster.local:8001', 8001],
      ['WORKER_1', 'http://sandbox-abc123.ns.svc.cluster.local:8011', 8011],
      ['WORKER_2', 'http://sandbox-abc123.ns.svc.cluster.local:8012', 8012],
    ]);
    const viaIngress = podExposedUrls(pod, 'abc123', { ...options, domain: 'sb.example.com' });
    expect(viaIngress.map((u) => u.url)).toEqual([
      'https://abc123.sb.example.com',
      'https://vscode-abc123.sb.example.com',
      'https://work-1-abc123.sb.example.com',
      'https://work-2-abc123.sb.example.com',
    ]);
    // A pod made before the extra ports existed still exposes its agent server.
    const old: V1Pod = { spec: { containers: [{ name: 'agent-server', ports: [{ name: 'agent-server', containerPort: 8000 }] }] } };
    expect(podExposedUrls(old, 'abc123', options).map((u) => u.name)).toEqual(['AGENT_SERVER']);
  });
});

describe('sandbox limits', () => {
  // The deployment's defaults (SANDBOX_K8S_*): requests 500m / 512Mi, limits 2 cores / 1Gi, 2Gi disk.
  const defaults = { ...options, storageSize: '2Gi' };
  const withLimits = (limits: SandboxSpec['limits']) => ({ ...launch, spec: { ...launch.spec, limits } });
  const shape = (l: SandboxLaunch, o = defaults) => ({
    resources: buildPod(l, o).spec!.containers[0]!.resources,
    workspace: buildWorkspaceClaim(l, o).spec!.resources!.requests!.storage,
  });

  it("takes the spec's memory, cpu and disk as written: the container's limits, the claim's size and ephemeral storage", () => {
    expect(shape(withLimits({ memory: '4Gi', cpu: '3', pids: 256, disk: '10Gi' }))).toEqual({
      resources: {
        requests: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '10Gi' },
        limits: { memory: '4Gi', cpu: '3', 'ephemeral-storage': '10Gi' },
      },
      workspace: '10Gi',
    });
  });

  it('takes the defaults for what the spec leaves unset, one limit at a time', () => {
    expect(shape(launch)).toEqual({
      resources: {
        requests: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '2Gi' },
        limits: { memory: '1Gi', cpu: '2', 'ephemeral-storage': '2Gi' },
      },
      workspace: '2Gi',
    });
    expect(shape(withLimits({ cpu: '1500m' })).resources?.limits).toEqual({ memory: '1Gi', cpu: '1500m', 'ephemeral-storage': '2Gi' });
    expect(shape(withLimits({ disk: '5G' }))).toMatchObject({
      resources: { requests: { 'ephemeral-storage': '5G' }, limits: { memory: '1Gi', 'ephemeral-storage': '5G' } },
      workspace: '5G',
    });
    // No default cpu limit (SANDBOX_K8S_CPU_LIMIT unset): none, unless the spec sets one.
    expect(shape(launch, { ...defaults, cpuLimit: undefined }).resources?.limits).not.toHaveProperty('cpu');
    expect(shape(withLimits({ cpu: '2' }), { ...defaults, cpuLimit: undefined }).resources?.limits?.cpu).toBe('2');
  });

  it('lowers a cpu or memory request above its limit to the limit (the API server refuses request > limit), in any unit', () => {
    expect(shape(withLimits({ memory: '256Mi', cpu: '250m' })).resources?.requests).toMatchObject({ cpu: '250m', memory: '256Mi' });
    expect(shape(withLimits({ memory: '0.25Gi', cpu: '0.25' })).resources?.requests).toMatchObject({ cpu: '0.25', memory: '0.25Gi' });
    expect(shape(withLimits({ memory: '512Mi', cpu: '0.5' })).resources?.requests).toMatchObject({ cpu: '500m', memory: '512Mi' });
    expect(shape(withLimits({ memory: '600M' })).resources?.requests?.memory).toBe('512Mi'); // 600 MB > 512 MiB
  });

  it("gives pids no field: Kubernetes bounds them per node (the kubelet's podPidsLimit)", () => {
    const pod = JSON.stringify(buildPod(withLimits({ pids: 321 }), defaults));
    expect(pod).not.toContain('321');
    expect(pod).toEqual(JSON.stringify(buildPod(launch, defaults)));
  });
});

describe('podStatus', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  const pod = (status: V1Pod['status'], created = '2026-01-01T00:09:30Z'): V1Pod => ({
    metadata: { creationTimestamp: new Date(created) },
    status,
  });

  it.each<[string, V1Pod['status'], string, string | RegExp | null]>([
    ['pending', { phase: 'Pending' }, 'STARTING', null],
    ['running but not ready', { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] }, 'STARTING', null],
    ['running and ready', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }, 'RUNNING', null],
    [
      'an image that cannot be pulled',
      {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'a',
            image: 'i',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ImagePullBackOff', message: 'not found' } },
          },
        ],
      },
      'ERROR',
      'The sandbox container cannot start (ImagePullBackOff): not found',
    ],
    [
      'a crash loop',
      {
        phase: 'Running',
        containerStatuses: [
          { name: 'a', image: 'i', imageID: '', ready: false, restartCount: 5, state: { waiting: { reason: 'CrashLoopBackOff' } } },
        ],
      },
      'ERROR',
      'The agent server keeps crashing (CrashLoopBackOff)',
    ],
    ['a failed pod', { phase: 'Failed', reason: 'Evicted' }, 'ERROR', 'The sandbox pod failed (Evicted)'],
  ])("maps %s (the watch's trimmed copy too)", (_label, status, expected, reason) => {
    expect(podStatus(pod(status), 120_000, now)).toEqual({ status: expected, reason });
    const slim = pod(structuredClone(status));
    slimPod(slim);
    expect(podStatus(slim, 120_000, now)).toEqual({ status: expected, reason });
  });

  it("trims a watched pod to what the runtime reads: its status, its URLs, the watch's keys", () => {
    const built = buildPod(launch, options);
    const full: V1Pod = {
      ...built,
      metadata: {
        ...built.metadata,
        namespace: 'sandboxes',
        resourceVersion: '42',
        creationTimestamp: new Date('2026-01-01T00:09:30Z'),
        managedFields: [{ manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:status': { 'f:conditions': {} } } }],
      },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], hostIP: '10.0.0.1', podIP: '10.1.0.9' },
    };
    const slim = structuredClone(full);
    slimPod(slim);
    expect(podStatus(slim, 120_000, now)).toEqual(podStatus(full, 120_000, now));
    expect(podExposedUrls(slim, 'abc123', options)).toEqual(podExposedUrls(full, 'abc123', options));
    expect(slim.metadata).toEqual({
      name: full.metadata!.name,
      namespace: 'sandboxes',
      resourceVersion: '42',
      creationTimestamp: full.metadata!.creationTimestamp,
      deletionTimestamp: undefined,
    });
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(full).length / 4);
  });

  it('reports ERROR once the start-up timeout has passed since the pod was created', () => {
    expect(podStatus(pod({ phase: 'Pending' }, '2026-01-01T00:07:00Z'), 120_000, now)).toEqual({
      status: 'ERROR',
      reason: 'The agent server did not become ready within 120 s',
    });
  });
});

describe('browserOrigins', () => {
  it('is the public origin and the trusted ones; a service on localhost names both spellings', async () => {
    const { browserOrigins } = await import('../../src/sandbox/service/sandbox-urls.js');
    expect(browserOrigins('https://agents.example.com/base', ['https://next.example.com'])).toEqual([
      'https://agents.example.com',
      'https://next.example.com',
    ]);
    expect(browserOrigins('http://127.0.0.1:3000', [])).toEqual(['http://127.0.0.1:3000', 'http://localhost:3000']);
    expect(browserOrigins('http://localhost', [])).toEqual(['http://localhost', 'http://127.0.0.1']);
  });
});
