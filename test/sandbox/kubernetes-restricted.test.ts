// Restricted pod security and spec limits against a real kube-apiserver (its PodSecurity admission
// plugin is on by default): the sandbox namespace exactly as k8s/base/namespaces.yaml declares it,
// a sandbox whose spec sets limits started into it by the Kubernetes runtime, and the same pod
// with one rule broken at a time, each refused, so the acceptance cannot come from a plugin that
// is off. No kubelet or scheduler is needed: admission happens when the pod is created.
import fs from 'node:fs';
import path from 'node:path';
import { ApiException, CoreV1Api, type V1Namespace, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createLogger } from '../../src/logger.js';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { buildPod } from '../../src/sandbox/kubernetes/kubernetes-objects.js';
import { KubernetesSandboxRuntime } from '../../src/sandbox/kubernetes/kubernetes-runtime.js';
import type { SandboxLaunch } from '../../src/sandbox/runtime.js';
import { startKubeControlPlane, type KubeControlPlane } from '../helpers/kube-control-plane.js';
import { kubernetesOptions } from '../helpers/kubernetes-options.js';

const namespace = 'agent-sandboxes';
const manifest = parseAllDocuments(fs.readFileSync(path.join(PACKAGE_ROOT, 'k8s/base/namespaces.yaml'), 'utf8'))
  .map((d) => d.toJSON() as V1Namespace)
  .find((ns) => ns.metadata?.name === namespace)!;
let cp: KubeControlPlane;
let core: CoreV1Api;

beforeAll(async () => {
  cp = await startKubeControlPlane();
  core = cp.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: manifest });
}, 15 * 60_000);

afterAll(async () => {
  await cp?.stop();
}, 60_000);

// The defaults ask for more than this spec allows, so the pod is valid only if its requests were
// lowered to the spec's limits.
const options = kubernetesOptions({ namespace, cpuRequest: '1', memoryRequest: '1Gi', cpuLimit: undefined, memoryLimit: '2Gi' });
const launch: SandboxLaunch = {
  sandboxId: 'restricted00000000000000000000aa',
  userId: 'pss-user',
  spec: {
    id: 'ghcr.io/openhands/agent-server:test',
    command: ['--port', '8000'],
    initial_env: {},
    working_dir: '/workspace/project',
    limits: { memory: '768Mi', cpu: '500m', pids: 512, disk: '5Gi' },
  },
  sessionApiKey: 'session-key-for-pss-test',
  secretKey: 'sealing-key',
  webhookBaseUrl: 'http://agent-control-plane.agent-control-plane.svc.cluster.local/api/v1/webhooks/x',
};

/** The API server's answer to creating this pod: null when created, else the error's code and message. */
async function create(pod: V1Pod): Promise<{ code: number; message: string } | null> {
  return core.createNamespacedPod({ namespace, body: pod }).then(
    () => null,
    (error: unknown) => {
      if (!(error instanceof ApiException)) throw error;
      return { code: error.code, message: (JSON.parse(String(error.body)) as { message: string }).message };
    },
  );
}

describe('sandbox pods under the restricted Pod Security level', () => {
  it('the namespace manifest enforces restricted', () => {
    expect(manifest.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it("accepts the sandbox the runtime starts for a spec with limits, and the pod carries the spec's limits", async () => {
    const runtime = new KubernetesSandboxRuntime(cp.kubeConfig, options, 60_000, createLogger('silent'));
    try {
      await runtime.start(launch);
    } finally {
      await runtime.close();
    }
    const name = `sandbox-${launch.sandboxId}`;
    const pod = await core.readNamespacedPod({ namespace, name });
    expect(pod.spec?.containers[0]?.resources).toEqual({
      requests: { cpu: '500m', memory: '768Mi', 'ephemeral-storage': '5Gi' },
      limits: { cpu: '500m', memory: '768Mi', 'ephemeral-storage': '5Gi' },
    });
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: `${name}-workspace` });
    expect(claim.spec?.resources?.requests).toEqual({ storage: '5Gi' });
  });

  // Each variant is the accepted pod with one thing changed; the API server names the rule it broke.
  const container = (pod: V1Pod) => pod.spec!.containers[0]!;
  let broken = 0;
  it.each<[string, (pod: V1Pod) => void, string]>([
    [
      'allows privilege escalation',
      (p) => (container(p).securityContext!.allowPrivilegeEscalation = true),
      'allowPrivilegeEscalation != false',
    ],
    ['has no seccomp profile', (p) => delete p.spec!.securityContext!.seccompProfile, 'seccompProfile'],
    ['runs the Unconfined seccomp profile', (p) => (p.spec!.securityContext!.seccompProfile = { type: 'Unconfined' }), 'seccompProfile'],
    ['does not promise a non-root user', (p) => delete p.spec!.securityContext!.runAsNonRoot, 'runAsNonRoot != true'],
    ['runs as root', (p) => (p.spec!.securityContext!.runAsUser = 0), 'runAsUser=0'],
    ['keeps its capabilities', (p) => delete container(p).securityContext!.capabilities, 'unrestricted capabilities'],
    ['adds a capability', (p) => (container(p).securityContext!.capabilities!.add = ['NET_RAW']), 'unrestricted capabilities'],
    // (privileged with allowPrivilegeEscalation false is invalid before pod security looks: 422)
    [
      'is privileged',
      (p) => Object.assign(container(p).securityContext!, { privileged: true, allowPrivilegeEscalation: true }),
      'privileged (container "agent-server"',
    ],
    ['shares the host network', (p) => (p.spec!.hostNetwork = true), 'host namespaces'],
    ['mounts a host path', (p) => p.spec!.volumes!.push({ name: 'host', hostPath: { path: '/' } }), 'restricted volume type "hostPath"'],
    ['binds a host port', (p) => (container(p).ports![0]!.hostPort = 8000), 'hostPort'],
  ])('refuses the pod with 403 when it %s', async (_what, breakRule, rule) => {
    const pod = buildPod(launch, options);
    pod.metadata!.name = `broken-${++broken}`;
    breakRule(pod);
    const answer = await create(pod);
    expect(answer?.code).toBe(403);
    expect(answer?.message).toContain('violates PodSecurity "restricted:latest"');
    expect(answer?.message).toContain(rule);
  });
});
