// The sandbox runtime interface: one small contract, two implementations (local processes,
// Kubernetes pods). Runtimes know nothing of users, paging or the database; the sandboxes
// service owns the records and asks the runtime for live state.

/** What a sandbox runs: configured (SANDBOX_SPECS_FILE) or built in (services/sandbox-specs.service.ts). */
export interface SandboxSpec {
  id: string;
  command: string[] | null;
  initial_env: Record<string, string>;
  working_dir: string;
  /** Host paths an isolated process sandbox sees read-only at the same path (what its command needs beyond /usr and /etc). */
  read_only_paths?: string[];
  /** The agent-server version whose cached venv fills {agent_server_python} (process runtime); else AGENT_SERVER_VERSION. */
  agent_server_version?: string;
  /** Resource limits of each sandbox of this spec; unset fields take the runtime's defaults (SandboxLimits). */
  limits?: SpecLimits;
  /** Its agent server can start dormant and be initialised later (POST /api/init, agent server ≥ 1.58): warm sandboxes do. */
  deferred_init?: boolean;
}

/**
 * A spec's limits as written: memory and disk as Kubernetes quantities ("4Gi", "512Mi"), cpu in
 * cores ("2", "500m"), pids a count. src/sandbox/quantities.ts reads them.
 */
export interface SpecLimits {
  memory?: string;
  cpu?: string;
  pids?: number;
  disk?: string;
}

/** The limits a sandbox runs with, resolved from its spec and the deployment's defaults. */
export interface SandboxLimits {
  memoryBytes: number;
  /** CPU time per wall-clock second, in cores (1.5 = one and a half cores). */
  cpus: number;
  pids: number;
  diskBytes: number;
}

export type SandboxStatus = 'STARTING' | 'RUNNING' | 'PAUSED' | 'ERROR' | 'MISSING';

export interface ExposedUrl {
  name: string;
  url: string;
  /** The port the service behind the URL listens on inside the sandbox (web-hosts shows it). */
  port?: number;
}

export interface SandboxLaunch {
  sandboxId: string;
  userId: string;
  spec: SandboxSpec;
  sessionApiKey: string;
  /** OH_SECRET_KEY: what the agent server seals its stored secrets with; the same across resumes (the session key is new on each). */
  secretKey: string;
  /** OH_WEBHOOKS_0_BASE_URL: where the agent server reports conversations and events. */
  webhookBaseUrl: string;
  /** Origins whose pages call the agent server from a browser (its CORS list); none when unset. */
  corsOrigins?: string[];
  /** The conversation's secrets, in the agent server's environment (its hooks get that environment). */
  env?: Record<string, string>;
  /** OH_DEFERRED_INIT: the agent server waits for POST /api/init (a warm sandbox, initialised at its claim). */
  deferredInit?: boolean;
  /**
   * An automation run's sandbox: the code the automation service runs there calls the URLs it was
   * given for this service (its own address), and installs the SDK with uv (docs/automation-service-notes.md).
   */
  automationRun?: boolean;
}

/**
 * The secrets a launch adds to the agent server's environment: never one the launch sets itself
 * (OH_*, the session and process basics), so a secret cannot change how the sandbox runs.
 */
export function secretsEnv(env: Record<string, string> = {}, taken: Record<string, string> = {}): Record<string, string> {
  const reserved = (name: string) =>
    name in taken || /^(OH_|SESSION_API_KEY)/.test(name) || ['PATH', 'HOME', 'LANG', 'PWD', 'USER'].includes(name);
  return Object.fromEntries(Object.entries(env).filter(([name]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !reserved(name)));
}

/** What tells an agent server to start dormant (agent server ≥ 1.58: OH_DEFERRED_INIT). */
export const deferredInitEnv = (launch: Pick<SandboxLaunch, 'deferredInit'>): Record<string, string> =>
  launch.deferredInit ? { OH_DEFERRED_INIT: 'true' } : {};

/**
 * The agent server's conversation leases off (OH_LEASE_TTL_SECONDS=0, agent server 1.58): they keep
 * two instances sharing storage from owning one conversation, and here one agent server serves a
 * workspace by construction (a process, a pod on its own claim). Left on, a sandbox resumed after
 * an unclean stop did not find its conversations (404) for up to 45 s: the dead owner's host name
 * and pid ("sandbox", a low pid in a fresh pid namespace) are the new process's own, so the lease
 * looked alive.
 */
export const SINGLE_INSTANCE_ENV: Readonly<Record<string, string>> = { OH_LEASE_TTL_SECONDS: '0' };

/** OH_ALLOW_CORS_ORIGINS_0…n: the agent server's CORS allowlist. */
export function corsEnv(origins: string[] = []): Record<string, string> {
  return Object.fromEntries(origins.map((origin, i) => [`OH_ALLOW_CORS_ORIGINS_${i}`, origin]));
}

export interface SandboxState {
  status: SandboxStatus;
  /**
   * Set once RUNNING: AGENT_SERVER first, then VSCODE (when the agent server runs it; the URL
   * has no token yet: the sandboxes service adds it) and WORKER_1, WORKER_2.
   */
  exposedUrls: ExposedUrl[] | null;
  /** Why the sandbox is in ERROR (or MISSING), in words a user can act on. */
  reason: string | null;
  /** Where this service reaches the agent server (in-cluster address on Kubernetes); set when RUNNING. */
  internalUrl?: string | null;
}

export interface SandboxRuntime {
  readonly kind: 'process' | 'kubernetes';
  /** Where sandboxes reach this service (callbacks), when not at its own URL; undefined/null = WEB_URL or the listening URL. */
  callbackOrigin?(): string | null;
  /** Refuses (AppError) a new sandbox for a user this runtime cannot take now; undefined = always takes. */
  admit?(userId: string): Promise<void>;
  /** Creates and starts everything; on failure removes what it created and throws AppError. */
  start(launch: SandboxLaunch): Promise<void>;
  /** Live state; `desired` is what the service last asked for (a stopped sandbox is PAUSED only if paused on purpose). */
  state(sandboxId: string, desired: 'running' | 'paused'): Promise<SandboxState>;
  /** Stops the sandbox and keeps its workspace. Idempotent. */
  pause(sandboxId: string): Promise<void>;
  /** Starts a paused sandbox again on the same workspace. */
  resume(launch: SandboxLaunch): Promise<void>;
  /** Removes everything. Idempotent. */
  remove(sandboxId: string): Promise<void>;
  /** Ids of every sandbox that has runtime objects here (processes or directories; pods or claims). The reconciler compares them with the records. */
  list(): Promise<string[]>;
  /** The working directory the agent should use, as seen inside the sandbox. */
  workingDir(sandboxId: string, spec: SandboxSpec): string;
  close(): Promise<void>;
}
