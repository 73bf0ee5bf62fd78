// The sandbox wing's configuration: the runtime, its isolation and limits, Kubernetes, and the
// lifecycle policies. config.ts spreads both halves into the one environment schema and config.
import path from 'node:path';
import { z } from 'zod';
import { keyValues, optionalString, shaped, splitList, tolerations } from './config-values.js';
import { parseBytes, parseCores } from './quantities.js';

const quantity = (parse: (v: string) => number | null, fallback: string, shape: string) =>
  z
    .string()
    .default(fallback)
    .refine((v) => parse(v) !== null, { message: `must be ${shape}` });

const hostPorts = optionalString
  .transform((v) => splitList(v).map(Number))
  .refine((ports) => ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536), { message: 'must list ports such as 11434,8080' });

export const sandboxEnv = {
  SANDBOX_RUNTIME: z.enum(['process', 'kubernetes']).default('process'),
  SANDBOX_ISOLATION: z.enum(['auto', 'bubblewrap', 'none']).default('auto'),
  BWRAP_PATH: optionalString,
  PASTA_PATH: optionalString,
  // Host loopback ports every local sandbox may reach besides the service (a local LLM server).
  SANDBOX_HOST_PORTS: hostPorts,
  // Each process sandbox's limits unless its spec sets them (docs/sandboxes.md, Limits).
  SANDBOX_MEMORY_LIMIT: quantity(parseBytes, '4Gi', 'a size such as 4Gi or 512Mi'),
  SANDBOX_CPU_LIMIT: quantity(parseCores, '2', 'cores such as 2 or 500m'),
  SANDBOX_PIDS_LIMIT: z.coerce.number().int().min(16).max(1_000_000).default(1024),
  SANDBOX_DISK_LIMIT: quantity(parseBytes, '10Gi', 'a size such as 10Gi'),
  SANDBOX_SPECS_FILE: optionalString,
  SANDBOX_MAX_RUNNING_PER_USER: z.coerce.number().int().min(1).max(1000).default(5),
  SANDBOX_AT_LIMIT: z.enum(['refuse', 'pause-oldest']).default('refuse'),
  // Conversations a grouped start puts into one sandbox at most (settings sandbox_grouping_strategy); the reference's 20.
  SANDBOX_MAX_CONVERSATIONS: z.coerce.number().int().min(1).max(1000).default(20),
  SANDBOX_MAX_CONCURRENT_STARTS: z.coerce.number().int().min(1).max(1000).default(4),
  SANDBOX_STARTUP_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
  SANDBOX_IMAGE: z.string().default('ghcr.io/openhands/agent-server:4e2ecd8-python'),
  AGENT_SERVER_VERSION: z.string().default('1.58.0'),
  AGENT_SERVER_PYTHON: optionalString,
  SANDBOX_SPEC_2025: optionalString, // the spec of sandboxes the 2025 clients start (services/sandbox-specs.service.ts)
  SANDBOX_K8S_NAMESPACE: shaped(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'agent-sandboxes'),
  SANDBOX_K8S_KUBECONFIG: optionalString,
  SANDBOX_K8S_CPU_REQUEST: z.string().default('1'),
  SANDBOX_K8S_MEMORY_REQUEST: z.string().default('1Gi'),
  SANDBOX_K8S_CPU_LIMIT: optionalString,
  SANDBOX_K8S_MEMORY_LIMIT: z.string().default('2Gi'),
  SANDBOX_K8S_STORAGE_SIZE: z.string().default('2Gi'),
  SANDBOX_K8S_STORAGE_CLASS: optionalString,
  SANDBOX_K8S_NODE_SELECTOR: keyValues,
  SANDBOX_K8S_TOLERATIONS: tolerations,
  SANDBOX_K8S_IMAGE_PULL_SECRET: optionalString,
  SANDBOX_K8S_RUNTIME_CLASS: optionalString,
  SANDBOX_K8S_RUN_AS_USER: z.coerce.number().int().min(1).default(10001),
  SANDBOX_DOMAIN: optionalString,
  SANDBOX_INGRESS_CLASS: optionalString,
  SANDBOX_INGRESS_TLS_SECRET: optionalString,
  SANDBOX_URL_SCHEME: z.enum(['http', 'https']).default('https'),
  // Where browsers reach agent servers: their own address, or through this service (src/http/agent-server-proxy.ts).
  SANDBOX_AGENT_URLS: z.enum(['auto', 'direct', 'service']).default('auto'),
  KUBERNETES_SERVICE_HOST: optionalString,
  SANDBOX_IDLE_PAUSE_SECONDS: z.coerce.number().min(0).default(1800),
  SANDBOX_PAUSED_RETENTION_SECONDS: z.coerce
    .number()
    .min(0)
    .default(30 * 24 * 3600),
  SANDBOX_WARM_POOL_SIZE: z.coerce.number().int().min(0).max(100).default(0),
  SANDBOX_LIFECYCLE_INTERVAL_MS: z.coerce.number().int().min(50).default(30_000),
  SANDBOX_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(0).default(300_000),
  SANDBOX_RESUME_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  SANDBOX_RESUME_BACKOFF_MS: z.coerce.number().int().min(0).default(1_000),
};

type SandboxEnv = z.output<z.ZodObject<typeof sandboxEnv>>;

export function sandboxConfig(e: SandboxEnv) {
  return {
    sandbox: {
      runtime: e.SANDBOX_RUNTIME,
      // How the process runtime isolates sandboxes (src/sandbox/isolation/isolation.ts).
      isolation: e.SANDBOX_ISOLATION,
      bwrapPath: e.BWRAP_PATH,
      pastaPath: e.PASTA_PATH,
      hostPorts: e.SANDBOX_HOST_PORTS,
      limits: {
        memoryBytes: parseBytes(e.SANDBOX_MEMORY_LIMIT)!,
        cpus: parseCores(e.SANDBOX_CPU_LIMIT)!,
        pids: e.SANDBOX_PIDS_LIMIT,
        diskBytes: parseBytes(e.SANDBOX_DISK_LIMIT)!,
      },
      specsFile: e.SANDBOX_SPECS_FILE ? path.resolve(e.SANDBOX_SPECS_FILE) : undefined,
      maxRunningPerUser: e.SANDBOX_MAX_RUNNING_PER_USER,
      // What a start or resume past the limit does (src/sandbox/service/sandbox-slots.ts).
      atLimit: e.SANDBOX_AT_LIMIT,
      maxConversations: e.SANDBOX_MAX_CONVERSATIONS,
      maxConcurrentStarts: e.SANDBOX_MAX_CONCURRENT_STARTS,
      startupTimeoutMs: e.SANDBOX_STARTUP_TIMEOUT_MS,
      image: e.SANDBOX_IMAGE,
      agentServerVersion: e.AGENT_SERVER_VERSION,
      agentServerPython: e.AGENT_SERVER_PYTHON,
      spec2025: e.SANDBOX_SPEC_2025,
      agentUrls: e.SANDBOX_AGENT_URLS,
      kubernetes: {
        kubeconfig: e.SANDBOX_K8S_KUBECONFIG ? path.resolve(e.SANDBOX_K8S_KUBECONFIG) : undefined,
        inCluster: Boolean(e.KUBERNETES_SERVICE_HOST),
        namespace: e.SANDBOX_K8S_NAMESPACE,
        cpuRequest: e.SANDBOX_K8S_CPU_REQUEST,
        memoryRequest: e.SANDBOX_K8S_MEMORY_REQUEST,
        cpuLimit: e.SANDBOX_K8S_CPU_LIMIT,
        memoryLimit: e.SANDBOX_K8S_MEMORY_LIMIT,
        storageSize: e.SANDBOX_K8S_STORAGE_SIZE,
        storageClass: e.SANDBOX_K8S_STORAGE_CLASS,
        nodeSelector: e.SANDBOX_K8S_NODE_SELECTOR,
        tolerations: e.SANDBOX_K8S_TOLERATIONS,
        imagePullSecret: e.SANDBOX_K8S_IMAGE_PULL_SECRET,
        runtimeClassName: e.SANDBOX_K8S_RUNTIME_CLASS,
        runAsUser: e.SANDBOX_K8S_RUN_AS_USER,
        domain: e.SANDBOX_DOMAIN,
        ingressClassName: e.SANDBOX_INGRESS_CLASS,
        ingressTlsSecret: e.SANDBOX_INGRESS_TLS_SECRET,
        urlScheme: e.SANDBOX_URL_SCHEME,
      },
    },
    // Sandbox lifecycle policies (src/sandbox/lifecycle/); 0 disables a policy.
    lifecycle: {
      idlePauseMs: e.SANDBOX_IDLE_PAUSE_SECONDS * 1000,
      pausedRetentionMs: e.SANDBOX_PAUSED_RETENTION_SECONDS * 1000,
      warmPoolSize: e.SANDBOX_WARM_POOL_SIZE,
      intervalMs: e.SANDBOX_LIFECYCLE_INTERVAL_MS,
      reconcileIntervalMs: e.SANDBOX_RECONCILE_INTERVAL_MS,
      resumeAttempts: e.SANDBOX_RESUME_ATTEMPTS,
      resumeBackoffMs: e.SANDBOX_RESUME_BACKOFF_MS,
    },
  };
}
