import type { KubernetesSandboxOptions } from '../../src/sandbox/kubernetes/kubernetes-objects.js';

/** Kubernetes runtime options with every optional setting off, for tests to override. */
export function kubernetesOptions(overrides: Partial<KubernetesSandboxOptions> = {}): KubernetesSandboxOptions {
  return {
    namespace: 'ns',
    cpuRequest: '100m',
    memoryRequest: '128Mi',
    cpuLimit: undefined,
    memoryLimit: '256Mi',
    storageSize: '1Gi',
    storageClass: undefined,
    nodeSelector: {},
    tolerations: [],
    imagePullSecret: undefined,
    runtimeClassName: undefined,
    runAsUser: 10001,
    domain: undefined,
    ingressClassName: undefined,
    ingressTlsSecret: undefined,
    urlScheme: 'https',
    ...overrides,
  };
}
