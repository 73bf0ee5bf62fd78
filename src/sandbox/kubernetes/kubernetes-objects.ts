// Pure builders for the Kubernetes objects of one sandbox (unit-tested; no API calls here).
// Every object is named sandbox-<id>, carries the managed-by and sandbox-id labels (to find
// them) and the owner in an annotation (user ids need not be valid label values).
import type {
  V1Ingress,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceRequirements,
  V1Secret,
  V1Service,
  V1Toleration,
} from '@kubernetes/client-node';
import { parseBytes, parseCores } from '../../config/quantities.js';
import {
  corsEnv,
  deferredInitEnv,
  secretsEnv,
  SINGLE_INSTANCE_ENV,
  type ExposedUrl,
  type SandboxLaunch,
  type SandboxSpec,
} from '../runtime.js';
import { AGENT_SERVER, exposedUrls, exposureEnv, VSCODE, vscodeEnabled, WORKERS, type SandboxPorts } from '../sandbox-ports.js';

export const MANAGED_BY = 'agent-control-plane';
export const LABEL_SANDBOX_ID = 'agent-control-plane/sandbox-id';
export const ANNOTATION_OWNER = 'agent-control-plane/owner';
export const ANNOTATION_SPEC = 'agent-control-plane/spec';
export const AGENT_PORT = 8000;
// The reference Docker sandbox's container ports for VS Code and the two workers.
export const VSCODE_PORT = 8001;
export const WORKER_PORTS = [8011, 8012];
export const WORKSPACE_MOUNT = '/workspace';

export interface KubernetesSandboxOptions {
  namespace: string;
  cpuRequest: string;
  memoryRequest: string;
  cpuLimit: string | undefined;
  memoryLimit: string;
  storageSize: string;
  storageClass: string | undefined;
  nodeSelector: Record<string, string>;
  tolerations: V1Toleration[];
  imagePullSecret: string | undefined;
  runtimeClassName: string | undefined;
  runAsUser: number;
  /** When set, each sandbox gets an Ingress at <id>.<domain> (browser clients need a whole host). */
  domain: string | undefined;
  ingressClassName: string | undefined;
  ingressTlsSecret: string | undefined;
  urlScheme: 'http' | 'https';
}

export const sandboxName = (sandboxId: string) => `sandbox-${sandboxId}`;
export const workspaceClaimName = (sandboxId: string) => `sandbox-${sandboxId}-workspace`;
export const managedSelector = `app.kubernetes.io/managed-by=${MANAGED_BY}`;

/** The container ports of a sandbox of this spec. */
export function sandboxPorts(spec: SandboxSpec): SandboxPorts {
  return { agentServer: AGENT_PORT, vscode: vscodeEnabled(spec) ? VSCODE_PORT : null, workers: WORKER_PORTS };
}

/** The named container/Service ports (port names are what the Service and the runtime read back). */
export function namedPorts(ports: SandboxPorts): { name: string; port: number; exposed: string }[] {
  return [
    { name: 'agent-server', port: ports.agentServer, exposed: AGENT_SERVER },
    ...(ports.vscode !== null ? [{ name: 'vscode', port: ports.vscode, exposed: VSCODE }] : []),
    ...ports.workers.map((port, i) => ({ name: `worker-${i + 1}`, port, exposed: WORKERS[i]! })),
  ];
}

/** Ingress host of an exposed port: the agent server at <id>.<domain>, the others prefixed (vscode-, work-1-, work-2-). */
export function exposedHost(sandboxId: string, exposedName: string, domain: string): string {
  const prefix = exposedName === VSCODE ? 'vscode-' : exposedName.startsWith('WORKER_') ? `work-${exposedName.slice(7)}-` : '';
  return `${prefix}${sandboxId}.${domain}`;
}

function metadata(launch: Pick<SandboxLaunch, 'sandboxId' | 'userId' | 'spec'>, name: string) {
  return {
    name,
    labels: {
      'app.kubernetes.io/managed-by': MANAGED_BY,
      'app.kubernetes.io/component': 'sandbox',
      [LABEL_SANDBOX_ID]: launch.sandboxId,
    },
    annotations: { [ANNOTATION_OWNER]: launch.userId, [ANNOTATION_SPEC]: launch.spec.id },
  };
}

/** Secret values reach the pod only through secretKeyRef, never inline in the pod spec. */
export function buildSecret(launch: SandboxLaunch): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadata(launch, sandboxName(launch.sandboxId)),
    type: 'Opaque',
    stringData: {
      ...podSecrets(launch),
      OH_SESSION_API_KEYS_0: launch.sessionApiKey,
      OH_SECRET_KEY: launch.secretKey,
      OH_WEBHOOKS_0_BASE_URL: launch.webhookBaseUrl,
    },
  };
}

/** The conversation's secrets the agent server runs with (SandboxLaunch.env), by the names they keep there. */
const podSecrets = (launch: SandboxLaunch) =>
  secretsEnv(launch.env, { ...launch.spec.initial_env, ...exposureEnv(sandboxPorts(launch.spec)) });

/**
 * What a sandbox of this spec may use: the spec's limits where it sets them, else the
 * SANDBOX_K8S_* defaults, as written (the API server reads the quantities). Disk sizes both places
 * a sandbox writes: the workspace claim and, as ephemeral-storage, the node's disk under the
 * container (image layer, /tmp, logs), past which the kubelet evicts the pod; its request is the
 * limit (the API server's default for it, written out), so a node holds only what its disk holds.
 * A cpu or memory request above its limit is lowered to it (the API server refuses such a pod).
 * pids has no per-pod field: the kubelet's podPidsLimit bounds every pod of a node.
 */
export function sandboxResources(
  spec: Pick<SandboxSpec, 'limits'>,
  options: KubernetesSandboxOptions,
): { container: V1ResourceRequirements; workspaceSize: string } {
  const set = spec.limits ?? {};
  const memory = set.memory ?? options.memoryLimit;
  const cpu = set.cpu ?? options.cpuLimit;
  const disk = set.disk ?? options.storageSize;
  return {
    container: {
      requests: {
        cpu: atMost(options.cpuRequest, cpu, parseCores),
        memory: atMost(options.memoryRequest, memory, parseBytes),
        'ephemeral-storage': disk,
      },
      limits: { memory, ...(cpu ? { cpu } : {}), 'ephemeral-storage': disk },
    },
    workspaceSize: disk,
  };
}

/** The request, or the limit where the request is the larger (a quantity it cannot read stays, for the API server to judge). */
function atMost(request: string, limit: string | undefined, parse: (quantity: string) => number | null): string {
  const [wanted, most] = [parse(request), limit === undefined ? null : parse(limit)];
  return wanted !== null && most !== null && wanted > most ? limit! : request;
}

export function buildWorkspaceClaim(launch: SandboxLaunch, options: KubernetesSandboxOptions): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: metadata(launch, workspaceClaimName(launch.sandboxId)),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: sandboxResources(launch.spec, options).workspaceSize } },
      ...(options.storageClass ? { storageClassName: options.storageClass } : {}),
    },
  };
}

/**
 * Headless (no cluster IP): its name resolves to the pod itself, which is all the service and an
 * Ingress need. A cluster IP per sandbox would exhaust the service CIDR (a /24 holds 254 sandboxes)
 * and give kube-proxy a rule set per sandbox on every node to rewrite as sandboxes come and go.
 */
export function buildService(launch: SandboxLaunch): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(launch, sandboxName(launch.sandboxId)),
    spec: {
      clusterIP: 'None',
      selector: { [LABEL_SANDBOX_ID]: launch.sandboxId },
      ports: namedPorts(sandboxPorts(launch.spec)).map(({ name, port }) => ({ name, port, targetPort: name as never })),
    },
  };
}

export function buildIngress(launch: SandboxLaunch, options: KubernetesSandboxOptions): V1Ingress | null {
  const domain = options.domain;
  if (!domain) return null;
  const ports = namedPorts(sandboxPorts(launch.spec));
  const hosts = ports.map((p) => exposedHost(launch.sandboxId, p.exposed, domain));
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: metadata(launch, sandboxName(launch.sandboxId)),
    spec: {
      ...(options.ingressClassName ? { ingressClassName: options.ingressClassName } : {}),
      ...(options.ingressTlsSecret ? { tls: [{ hosts, secretName: options.ingressTlsSecret }] } : {}),
      rules: ports.map((p, i) => ({
        host: hosts[i]!,
        http: {
          paths: [
            {
              path: '/',
              pathType: 'Prefix',
              backend: { service: { name: sandboxName(launch.sandboxId), port: { number: p.port } } },
            },
          ],
        },
      })),
    },
  };
}

export function buildPod(launch: SandboxLaunch, options: KubernetesSandboxOptions): V1Pod {
  const secretName = sandboxName(launch.sandboxId);
  const fromSecret = (key: string) => ({ name: key, valueFrom: { secretKeyRef: { name: secretName, key } } });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: metadata(launch, sandboxName(launch.sandboxId)),
    spec: {
      // Agent code must not reach the Kubernetes API with any identity.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: 'Always',
      // With the container's below, what the restricted Pod Security level asks of a pod (the
      // sandbox namespace enforces it: k8s/base/namespaces.yaml); no host namespaces, ports or paths.
      securityContext: {
        runAsNonRoot: true,
        runAsUser: options.runAsUser,
        runAsGroup: options.runAsUser,
        fsGroup: options.runAsUser,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      ...(Object.keys(options.nodeSelector).length ? { nodeSelector: options.nodeSelector } : {}),
      ...(options.tolerations.length ? { tolerations: options.tolerations } : {}),
      ...(options.imagePullSecret ? { imagePullSecrets: [{ name: options.imagePullSecret }] } : {}),
      ...(options.runtimeClassName ? { runtimeClassName: options.runtimeClassName } : {}),
      containers: [
        {
          name: 'agent-server',
          image: launch.spec.id,
          // The spec's command replaces the image CMD, as the reference's Docker runtime does.
          ...(launch.spec.command ? { args: launch.spec.command } : {}),
          ports: namedPorts(sandboxPorts(launch.spec)).map(({ name, port }) => ({ name, containerPort: port })),
          env: [
            ...Object.entries(launch.spec.initial_env).map(([name, value]) => ({ name, value })),
            ...Object.entries(exposureEnv(sandboxPorts(launch.spec))).map(([name, value]) => ({ name, value })),
            fromSecret('OH_SESSION_API_KEYS_0'),
            fromSecret('OH_SECRET_KEY'),
            fromSecret('OH_WEBHOOKS_0_BASE_URL'),
            ...Object.keys(podSecrets(launch)).map(fromSecret),
            ...Object.entries({ ...corsEnv(launch.corsOrigins), ...deferredInitEnv(launch), ...SINGLE_INSTANCE_ENV }).map(
              ([name, value]) => ({
                name,
                value,
              }),
            ),
          ],
          readinessProbe: {
            httpGet: { path: '/alive', port: 'agent-server' as never },
            periodSeconds: 5,
            timeoutSeconds: 3,
            failureThreshold: 3,
          },
          resources: sandboxResources(launch.spec, options).container,
          securityContext: {
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [{ name: 'workspace', mountPath: WORKSPACE_MOUNT }],
        },
      ],
      volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: workspaceClaimName(launch.sandboxId) } }],
    },
  };
}

export const serviceUrl = (sandboxId: string, port: number, namespace: string) =>
  `http://${sandboxName(sandboxId)}.${namespace}.svc.cluster.local:${port}`;

/**
 * The browser-facing URLs of the ports a pod declares (pods made before VS Code and worker
 * ports existed expose AGENT_SERVER only): Ingress hosts with a sandbox domain, else the
 * in-cluster Service.
 */
export function podExposedUrls(pod: V1Pod, sandboxId: string, options: KubernetesSandboxOptions): ExposedUrl[] {
  const declared = new Set((pod.spec?.containers[0]?.ports ?? []).map((p) => p.name));
  const has = (name: string) => declared.has(name);
  const ports: SandboxPorts = {
    agentServer: AGENT_PORT,
    vscode: has('vscode') ? VSCODE_PORT : null,
    workers: WORKER_PORTS.filter((_, i) => has(`worker-${i + 1}`)),
  };
  const domain = options.domain;
  return exposedUrls(ports, (port, name) =>
    domain ? `${options.urlScheme}://${exposedHost(sandboxId, name, domain)}` : serviceUrl(sandboxId, port, options.namespace),
  );
}

/**
 * Trims a watched pod, in place, to what the runtime reads of it (podStatus, podExposedUrls, the
 * watch's own bookkeeping): a pod as the API server sends it, managed fields, spec and all, is
 * tens of KiB in memory, and every replica's watch keeps every sandbox's pod.
 */
export function slimPod(pod: V1Pod): void {
  const { metadata, spec, status } = pod;
  if (metadata) {
    const { name, namespace, resourceVersion, creationTimestamp, deletionTimestamp } = metadata;
    pod.metadata = { name, namespace, resourceVersion, creationTimestamp, deletionTimestamp };
  }
  const container = spec?.containers[0];
  if (container)
    pod.spec = {
      containers: [{ name: container.name, ports: container.ports?.map(({ name, containerPort }) => ({ name, containerPort })) }],
    };
  if (status) {
    const waiting = status.containerStatuses?.[0]?.state?.waiting;
    pod.status = {
      phase: status.phase,
      reason: status.reason,
      conditions: status.conditions?.map(({ type, status: value }) => ({ type, status: value })),
      ...(waiting ? { containerStatuses: [{ state: { waiting } } as never] } : {}),
    };
  }
}
