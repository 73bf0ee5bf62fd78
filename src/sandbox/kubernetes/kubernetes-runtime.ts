// Kubernetes runtime: per sandbox a Pod (agent server), a PVC (workspace), a Secret (session
// key, webhook URL), a Service (agent port) and, with a sandbox domain, an Ingress.
//
// - Pause deletes the pod and keeps the rest; resume recreates it on the same PVC (its Secret
//   replaced: a new session key); remove deletes all objects (each tolerates 404: idempotent).
// - Status comes from a label-scoped pod informer (watch). While the watch is disconnected
//   reads answer 503 rather than a stale status; after reconnecting it relists, so the true
//   status returns. Every replica watches the API server itself, so replicas agree, and
//   nothing lives only in memory: a restarted service reads the same state.
// - The start timeout counts from the pod's creationTimestamp: it holds across restarts and replicas.
// - Kubernetes errors are mapped here, once: unreachable/refusing → 503.
import {
  ApiException,
  CoreV1Api,
  makeInformer,
  NetworkingV1Api,
  type Informer,
  type KubeConfig,
  type ObjectCache,
  type V1Pod,
} from '@kubernetes/client-node';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import {
  AGENT_PORT,
  buildIngress,
  buildPod,
  buildSecret,
  buildService,
  buildWorkspaceClaim,
  LABEL_SANDBOX_ID,
  managedSelector,
  podExposedUrls,
  sandboxName,
  slimPod,
  serviceUrl,
  workspaceClaimName,
  type KubernetesSandboxOptions,
} from './kubernetes-objects.js';
import type { SandboxLaunch, SandboxRuntime, SandboxSpec, SandboxState } from '../runtime.js';

const FAILED_WAITING_REASONS = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);
const SYNC_WAIT_MS = 5_000;
const RESTART_DELAY_MS = 1_000;

export class KubernetesSandboxRuntime implements SandboxRuntime {
  readonly kind = 'kubernetes' as const;
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private informer: (Informer<V1Pod> & ObjectCache<V1Pod>) | undefined;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private closed = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly options: KubernetesSandboxOptions,
    private readonly startupTimeoutMs: number,
    private readonly log: Logger,
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.networking = kubeConfig.makeApiClient(NetworkingV1Api);
  }

  workingDir(_sandboxId: string, spec: SandboxSpec): string {
    return spec.working_dir;
  }

  async start(launch: SandboxLaunch): Promise<void> {
    const namespace = this.options.namespace;
    const undo: (() => Promise<unknown>)[] = [];
    try {
      await this.core.createNamespacedSecret({ namespace, body: buildSecret(launch) });
      undo.push(() => this.core.deleteNamespacedSecret({ namespace, name: sandboxName(launch.sandboxId) }));
      await this.core.createNamespacedPersistentVolumeClaim({ namespace, body: buildWorkspaceClaim(launch, this.options) });
      undo.push(() => this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name: workspaceClaimName(launch.sandboxId) }));
      await this.core.createNamespacedService({ namespace, body: buildService(launch) });
      undo.push(() => this.core.deleteNamespacedService({ namespace, name: sandboxName(launch.sandboxId) }));
      const ingress = buildIngress(launch, this.options);
      if (ingress) {
        await this.networking.createNamespacedIngress({ namespace, body: ingress });
        undo.push(() => this.networking.deleteNamespacedIngress({ namespace, name: sandboxName(launch.sandboxId) }));
      }
      await this.core.createNamespacedPod({ namespace, body: buildPod(launch, this.options) });
      this.log.info({ sandboxId: launch.sandboxId, namespace }, 'sandbox objects created');
    } catch (error) {
      // Leave nothing half-created: undo in reverse order, best effort.
      for (const step of undo.reverse()) await step().catch(() => {});
      throw kubernetesError(error, 'start the sandbox');
    }
  }

  async resume(launch: SandboxLaunch): Promise<void> {
    const namespace = this.options.namespace;
    try {
      await this.core.readNamespacedPersistentVolumeClaim({ namespace, name: workspaceClaimName(launch.sandboxId) });
    } catch (error) {
      if (statusCode(error) === 404) throw new AppError('NOT_FOUND', 'Sandbox workspace is gone', { reason: 'sandbox_workspace_gone' });
      throw kubernetesError(error, 'resume the sandbox');
    }
    // The session key is new on each resume: the pod reads it from the Secret (replaced, never read).
    const body = buildSecret(launch);
    await this.core.replaceNamespacedSecret({ namespace, name: body.metadata!.name!, body }).catch((error: unknown) => {
      if (statusCode(error) === 404) return this.core.createNamespacedSecret({ namespace, body });
      throw kubernetesError(error, 'resume the sandbox');
    });
    try {
      await this.core.createNamespacedPod({ namespace, body: buildPod(launch, this.options) });
    } catch (error) {
      if (statusCode(error) !== 409) throw kubernetesError(error, 'resume the sandbox'); // 409: already running
    }
  }

  async pause(sandboxId: string): Promise<void> {
    const name = sandboxName(sandboxId);
    await this.ignoreNotFound(() => this.core.deleteNamespacedPod({ namespace: this.options.namespace, name }), 'pause');
  }

  async remove(sandboxId: string): Promise<void> {
    const namespace = this.options.namespace;
    const name = sandboxName(sandboxId);
    // Every delete is attempted even if one fails (the reference stopped at the first error).
    const results = await Promise.allSettled([
      this.ignoreNotFound(() => this.core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 }), 'delete'),
      this.ignoreNotFound(() => this.networking.deleteNamespacedIngress({ namespace, name }), 'delete'),
      this.ignoreNotFound(() => this.core.deleteNamespacedService({ namespace, name }), 'delete'),
      this.ignoreNotFound(() => this.core.deleteNamespacedSecret({ namespace, name }), 'delete'),
      this.ignoreNotFound(
        () => this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name: workspaceClaimName(sandboxId) }),
        'delete',
      ),
    ]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async state(sandboxId: string, desired: 'running' | 'paused'): Promise<SandboxState> {
    const informer = await this.watching();
    const pod = informer.get(sandboxName(sandboxId), this.options.namespace);
    if (pod && !pod.metadata?.deletionTimestamp) {
      const { status, reason } = podStatus(pod, this.startupTimeoutMs, Date.now());
      const running = status === 'RUNNING';
      return {
        status,
        reason,
        exposedUrls: running ? podExposedUrls(pod, sandboxId, this.options) : null,
        internalUrl: running ? this.serviceUrl(sandboxId, AGENT_PORT) : null,
      };
    }
    const workspaceExists = await this.claimExists(sandboxId);
    if (desired === 'paused' && workspaceExists) return { status: 'PAUSED', exposedUrls: null, reason: null };
    return {
      status: 'MISSING',
      exposedUrls: null,
      reason: workspaceExists ? 'The sandbox pod no longer exists' : 'The sandbox workspace volume no longer exists',
    };
  }

  /** Sandboxes with a pod or a workspace claim (the objects that cost); remove() deletes the rest by name. */
  async list(): Promise<string[]> {
    const query = { namespace: this.options.namespace, labelSelector: managedSelector };
    const lists = await Promise.all([this.core.listNamespacedPod(query), this.core.listNamespacedPersistentVolumeClaim(query)]).catch(
      (error: unknown) => Promise.reject(kubernetesError(error, 'list the sandboxes')),
    );
    const ids = lists.flatMap((list) => list.items.map((o) => o.metadata?.labels?.[LABEL_SANDBOX_ID] ?? ''));
    return [...new Set(ids.filter(Boolean))];
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.restartTimer);
    await this.informer?.stop();
  }

  private serviceUrl(sandboxId: string, port: number): string {
    return serviceUrl(sandboxId, port, this.options.namespace);
  }

  private async claimExists(sandboxId: string): Promise<boolean> {
    try {
      await this.core.readNamespacedPersistentVolumeClaim({ namespace: this.options.namespace, name: workspaceClaimName(sandboxId) });
      return true;
    } catch (error) {
      if (statusCode(error) === 404) return false;
      throw kubernetesError(error, 'read the sandbox status');
    }
  }

  /** The pod informer, started on first use; 503 while it has no fresh list. */
  private async watching(): Promise<Informer<V1Pod> & ObjectCache<V1Pod>> {
    if (!this.informer) {
      const namespace = this.options.namespace;
      const informer = makeInformer<V1Pod>(
        this.kubeConfig,
        `/api/v1/namespaces/${namespace}/pods`,
        async () => {
          const list = await this.core.listNamespacedPod({ namespace, labelSelector: managedSelector });
          list.items.forEach(slimPod);
          this.markSynced();
          return list;
        },
        managedSelector,
      );
      informer.on('add', slimPod);
      informer.on('update', slimPod);
      informer.on('error', (error: unknown) => {
        this.synced = false;
        this.log.warn({ err: describe(error) }, 'sandbox pod watch failed; reconnecting');
        if (!this.closed) this.restartTimer = setTimeout(() => void informer.start().catch(() => {}), RESTART_DELAY_MS);
      });
      this.informer = informer;
      void informer.start().catch(() => {});
    }
    if (!this.synced) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, SYNC_WAIT_MS);
        this.syncWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (!this.synced) {
      const message = 'Kubernetes API unavailable: cannot read sandbox status';
      throw new AppError('SERVICE_UNAVAILABLE', message, { reason: 'sandbox_runtime_unavailable' });
    }
    return this.informer;
  }

  private markSynced(): void {
    this.synced = true;
    for (const wake of this.syncWaiters.splice(0)) wake();
  }

  private async ignoreNotFound(call: () => Promise<unknown>, action: string): Promise<void> {
    try {
      await call();
    } catch (error) {
      if (statusCode(error) !== 404) throw kubernetesError(error, `${action} the sandbox`);
    }
  }
}

/** Maps a pod to a sandbox status (pure; unit-tested). */
export function podStatus(pod: V1Pod, startupTimeoutMs: number, now: number): { status: SandboxState['status']; reason: string | null } {
  const container = pod.status?.containerStatuses?.[0];
  const waiting = container?.state?.waiting;
  if (waiting?.reason && FAILED_WAITING_REASONS.has(waiting.reason)) {
    const what = waiting.reason === 'CrashLoopBackOff' ? 'The agent server keeps crashing' : 'The sandbox container cannot start';
    return { status: 'ERROR', reason: `${what} (${waiting.reason})${waiting.message ? `: ${waiting.message}` : ''}` };
  }
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') {
    return { status: 'ERROR', reason: `The sandbox pod ${phase.toLowerCase()}${pod.status?.reason ? ` (${pod.status.reason})` : ''}` };
  }
  const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  if (phase === 'Running' && ready) return { status: 'RUNNING', reason: null };
  const created = pod.metadata?.creationTimestamp ? new Date(pod.metadata.creationTimestamp).getTime() : now;
  if (now - created > startupTimeoutMs) {
    return { status: 'ERROR', reason: `The agent server did not become ready within ${Math.round(startupTimeoutMs / 1000)} s` };
  }
  return { status: 'STARTING', reason: null };
}

function statusCode(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** One mapping of Kubernetes failures: unreachable or refusing → 503; a rejected object → 500. */
export function kubernetesError(error: unknown, action: string): AppError {
  if (error instanceof AppError) return error;
  const code = statusCode(error);
  const why = apiMessage(error);
  let message: string;
  if (code === undefined) message = `Kubernetes API unavailable: could not ${action} (${describe(error)})`;
  else if (code === 401 || code === 403) message = `Kubernetes API refused to ${action} (HTTP ${code}${why})`;
  else if (code >= 500 || code === 429) message = `Kubernetes API unavailable: could not ${action} (HTTP ${code}${why})`;
  else {
    const detail = `Kubernetes rejected the request to ${action} (HTTP ${code}${why})`;
    return new AppError('INTERNAL_SERVER_ERROR', detail, { cause: error });
  }
  return new AppError('SERVICE_UNAVAILABLE', message, { reason: 'sandbox_runtime_unavailable', cause: error });
}

/** The Status message of an API error (e.g. 'RuntimeClass "x" not found'); never holds secrets, which stay in the Secret. */
function apiMessage(error: unknown): string {
  try {
    const body = (error as { body?: unknown }).body;
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string } | undefined;
    return parsed?.message ? `: ${parsed.message.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause;
  if (cause?.code) return cause.code;
  return error instanceof Error ? error.message.split('\n')[0]!.slice(0, 200) : String(error);
}
