// Works durable start tasks (API.md B.7.3 with A.2): a task is claimed with a lease
// (atomic findOneAndUpdate), the lease is renewed while the work goes on, and every step is
// persisted before it runs. If the service dies, the lease expires and any replica (or the
// restarted service) claims the task again and redoes it from the top: every step is
// idempotent (an existing sandbox is reused, an existing clone is kept, the agent-server
// conversation id was chosen when the task was created). A task that keeps failing that way,
// or outlives its deadline, ends in ERROR with the reason: none stays in a working state.
import crypto from 'node:crypto';
import { EventEmitter } from 'node:events';
import os from 'node:os';
import type { Models } from '../../models/index.js';
import type { AppConversationStartRequest, StartTaskStatus } from '../../contract/app-conversations.schema.js';
import type { McpConfig } from '../../contract/mcp.schema.js';
import type { AccessTokens } from '../access-token.js';
import { AgentServerClient } from '../agent-server/client.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../crypto.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { GitProvidersService, RepositoryAccess } from './git-providers.service.js';
import type { SandboxesService } from './sandboxes.service.js';
import type { SecretsService } from './secrets.service.js';
import { hasUsableLlmKey, LLM_KEY_MISSING, type ResolvedSettings, type SettingsService } from './settings.service.js';

export interface StoredTask {
  _id: string;
  userId: string;
  status: StartTaskStatus;
  detail: string | null;
  app_conversation_id: string | null;
  sandbox_id: string | null;
  agent_server_url: string | null;
  request: AppConversationStartRequest;
  conversationId: string;
  mcpConfig?: string | null;
  attempts: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const TERMINAL: StartTaskStatus[] = ['READY', 'ERROR'];
const MAX_CONCURRENT = 4;
const SANDBOX_POLL_MS = 500;
const SETUP_SCRIPT_TIMEOUT_S = 600;

interface RunnerDeps {
  models: Models;
  box: SecretBox;
  settings: SettingsService;
  gitProviders: GitProvidersService;
  secrets: SecretsService;
  sandboxes: SandboxesService;
  accessTokens: AccessTokens;
  config: Config;
  webUrl: () => string;
  log: Logger;
}

class LeaseLost extends Error {}

export class StartTaskRunner {
  /** Emits the id of every task whose stored state changed in this process. */
  readonly updates = new EventEmitter();
  private readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
  private readonly active = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private polling = false;

  constructor(private readonly deps: RunnerDeps) {
    this.updates.setMaxListeners(0);
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Look for work now (called when a task is created). */
  kick(): void {
    if (!this.stopped) this.schedule(0);
  }

  /** Stops claiming and hands the leases of unfinished tasks back for another replica. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.active.size > 0) {
      await this.deps.models.StartTask.updateMany(
        { _id: { $in: [...this.active] }, leaseOwner: this.owner },
        { $set: { leaseOwner: null, leaseExpiresAt: null } },
      );
    }
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delayMs);
  }

  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    try {
      while (!this.stopped && this.active.size < MAX_CONCURRENT) {
        const task = await this.claim();
        if (!task) break;
        this.active.add(task._id);
        void this.run(task).finally(() => this.active.delete(task._id));
      }
    } catch (error) {
      this.deps.log.warn({ err: error }, 'claiming start tasks failed');
    } finally {
      this.polling = false;
      if (!this.stopped) this.schedule(this.deps.config.conversations.pollMs);
    }
  }

  private async claim(): Promise<StoredTask | null> {
    const now = new Date();
    return this.deps.models.StartTask.findOneAndUpdate(
      { status: { $nin: TERMINAL }, $or: [{ leaseExpiresAt: null }, { leaseExpiresAt: { $lt: now } }] },
      {
        $set: { leaseOwner: this.owner, leaseExpiresAt: new Date(now.getTime() + this.deps.config.conversations.leaseMs) },
        $inc: { attempts: 1 },
      },
      { sort: { createdAt: 1 }, new: true },
    ).lean<StoredTask>();
  }

  private async run(task: StoredTask): Promise<void> {
    const { leaseMs, maxAttempts, deadlineMs } = this.deps.config.conversations;
    const heartbeat = setInterval(() => void this.renewLease(task._id), Math.max(250, leaseMs / 3));
    const log = this.deps.log.child({ taskId: task._id, userId: task.userId });
    try {
      if (Date.now() - task.createdAt.getTime() > deadlineMs) {
        throw new AppError('INTERNAL_SERVER_ERROR', `The start did not finish within ${Math.round(deadlineMs / 60_000)} minutes`);
      }
      if (task.attempts > maxAttempts) {
        throw new AppError(
          'INTERNAL_SERVER_ERROR',
          `The start was interrupted ${task.attempts - 1} times (service restarts) and was given up`,
        );
      }
      await this.execute(task, log);
    } catch (error) {
      if (error instanceof LeaseLost) {
        log.warn('lost the lease of a start task; another worker owns it now');
        return;
      }
      const detail = error instanceof AppError ? error.message : 'Unexpected error while starting the conversation';
      if (!(error instanceof AppError)) log.error({ err: error }, 'start task failed');
      else log.info({ detail }, 'start task failed');
      await this.update(task._id, 'ERROR', { detail, leaseOwner: null, leaseExpiresAt: null }).catch(() => {});
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async execute(task: StoredTask, log: Logger): Promise<void> {
    const request = task.request;
    const settings = await this.deps.settings.resolve(task.userId);
    if (!settings) throw new AppError('BAD_REQUEST', 'Settings not found: save your LLM settings first');
    const model = request.llm_model || settings.llm_model;
    if (!model) throw new AppError('BAD_REQUEST', 'No LLM model configured: set llm_model in your settings');
    if (!hasUsableLlmKey(settings, model)) throw new AppError('BAD_REQUEST', LLM_KEY_MISSING);

    // 1. Sandbox: reuse the one recorded by an earlier attempt or given in the request.
    await this.update(task._id, 'WAITING_FOR_SANDBOX');
    let sandboxId = task.sandbox_id ?? request.sandbox_id ?? null;
    if (!sandboxId) {
      sandboxId = (await this.deps.sandboxes.start(task.userId)).id;
    } else {
      await this.deps.sandboxes.resume(task.userId, sandboxId).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'NOT_FOUND') throw new AppError('NOT_FOUND', `Sandbox not found: ${sandboxId}`);
        throw error;
      });
    }
    await this.update(task._id, 'WAITING_FOR_SANDBOX', { sandbox_id: sandboxId });
    const sandbox = await this.waitForSandbox(task.userId, sandboxId);
    const agent = new AgentServerClient(sandbox.internalUrl ?? sandbox.publicUrl!, sandbox.sessionKey);

    // 2. Repository.
    await this.update(task._id, 'PREPARING_REPOSITORY');
    const projectDir = await this.prepareRepository(task, settings, agent, sandbox.workingDir);

    // 3. Setup script (its failure is reported in the log, not fatal, as in the reference).
    await this.update(task._id, 'RUNNING_SETUP_SCRIPT');
    const setup = await agent.bash(`if [ -f .openhands/setup.sh ]; then chmod +x .openhands/setup.sh && . ./.openhands/setup.sh; fi`, {
      cwd: projectDir,
      timeoutSeconds: SETUP_SCRIPT_TIMEOUT_S,
    });
    if (setup.exitCode !== 0) log.warn({ exitCode: setup.exitCode }, '.openhands/setup.sh failed');

    // 4. Git hooks.
    await this.update(task._id, 'SETTING_UP_GIT_HOOKS');
    await agent.bash(INSTALL_PRE_COMMIT_HOOK, { cwd: projectDir, timeoutSeconds: 60 });

    // 5. The agent-server conversation (idempotent: fixed id; 200 if it already exists).
    await this.update(task._id, 'STARTING_CONVERSATION', { agent_server_url: sandbox.publicUrl });
    const body = await this.conversationRequest(task, settings, model, projectDir);
    await agent.startConversation(body);

    const now = new Date();
    await this.deps.models.AppConversation.updateOne(
      { _id: task.conversationId },
      {
        $set: {
          userId: task.userId,
          sandboxId,
          selected_repository: request.selected_repository ?? null,
          selected_branch: request.selected_branch ?? null,
          git_provider: request.git_provider ?? null,
          trigger: request.trigger ?? null,
          llm_model: model,
          pr_number: request.pr_number ?? [],
          parent_conversation_id: request.parent_conversation_id ?? null,
          updatedAt: now,
        },
        $setOnInsert: { createdAt: task.createdAt, title: null, metrics: null, execution_status: null },
      },
      { upsert: true },
    );
    await this.update(task._id, 'READY', { app_conversation_id: task.conversationId, leaseOwner: null, leaseExpiresAt: null });
    log.info({ conversationId: task.conversationId }, 'conversation ready');
  }

  private async waitForSandbox(userId: string, sandboxId: string) {
    const deadline = Date.now() + this.deps.config.sandbox.startupTimeoutMs + 5_000;
    for (;;) {
      const connection = await this.deps.sandboxes.connection(userId, sandboxId);
      const { status, reason } = connection.state;
      if (status === 'RUNNING' && (connection.internalUrl || connection.publicUrl)) return connection;
      if (status === 'ERROR' || status === 'MISSING') {
        throw new AppError('SERVICE_UNAVAILABLE', `Sandbox ${sandboxId} failed to start: ${reason ?? status}`);
      }
      if (Date.now() > deadline) throw new AppError('SERVICE_UNAVAILABLE', `Sandbox ${sandboxId} did not start in time (status ${status})`);
      await new Promise((r) => setTimeout(r, SANDBOX_POLL_MS));
    }
  }

  /** Clones (or initialises) the project; returns its directory, where the agent works. */
  private async prepareRepository(
    task: StoredTask,
    settings: ResolvedSettings,
    agent: AgentServerClient,
    workingDir: string,
  ): Promise<string> {
    const request = task.request;
    await runOrFail(agent, `mkdir -p ${sh(workingDir)}`, 'Could not create the working directory');
    if (!request.selected_repository) {
      await runOrFail(
        agent,
        `git rev-parse --git-dir >/dev/null 2>&1 || git init -q; git config --global --add safe.directory ${sh(workingDir)}`,
        'git init failed',
        workingDir,
      );
      await this.configureIdentity(agent, settings, workingDir);
      return workingDir;
    }
    const repository = request.selected_repository;
    const access = await this.deps.gitProviders.repositoryAccess(task.userId, repository, request.git_provider ?? null);
    if (!access)
      throw new AppError('UNAUTHORIZED', `Git provider authentication issue when getting remote URL: cannot access ${repository}`);
    const base = workingDir.replace(/\/+$/, '');
    const projectDir = `${base}/${repository.split('/').pop()}`;
    // The helper file lives beside the working directory (inside the sandbox's private area), not in a shared /tmp.
    const helper = `${base.slice(0, base.lastIndexOf('/')) || '/tmp'}/.git-credential-${task._id}`;
    await this.cloneWithoutPersistingToken(agent, access, projectDir, helper);
    await this.configureIdentity(agent, settings, projectDir);
    const branch = request.selected_branch;
    const checkout = branch
      ? `git checkout -q ${sh(branch)} 2>/dev/null || git checkout -q -b ${sh(branch)} origin/${sh(branch)}`
      : `git rev-parse -q --verify refs/heads/openhands-workspace-${task._id.slice(0, 8)} >/dev/null && git checkout -q openhands-workspace-${task._id.slice(0, 8)} || git checkout -q -b openhands-workspace-${task._id.slice(0, 8)}`;
    await runOrFail(agent, checkout, `Could not check out ${branch ? `branch ${branch}` : 'a new workspace branch'}`, projectDir);
    return projectDir;
  }

  /**
   * The token goes to git through a one-shot credential helper in a temporary file (sent by
   * file upload, so it appears in no command line or bash event), and is never written to
   * the repository's config: the remote URL stays token-free.
   */
  private async cloneWithoutPersistingToken(agent: AgentServerClient, access: RepositoryAccess, projectDir: string, helper: string) {
    const exists = await agent.bash(`test -d ${sh(projectDir)}/.git`, {});
    if (exists.exitCode === 0) return; // an earlier attempt cloned it already
    await agent.uploadFile(helper, `#!/bin/sh\necho username=${access.username}\necho password=${access.password}\n`);
    try {
      await runOrFail(
        agent,
        `chmod 700 ${sh(helper)} && GIT_TERMINAL_PROMPT=0 git -c credential.helper= -c credential.helper=${sh(helper)} clone -q ${sh(access.cloneUrl)} ${sh(projectDir)}`,
        `Could not clone ${access.cloneUrl}`,
      );
    } finally {
      await agent.bash(`rm -f ${sh(helper)}`, {}).catch(() => {});
    }
  }

  private async configureIdentity(agent: AgentServerClient, settings: ResolvedSettings, dir: string): Promise<void> {
    const commands = [
      settings.git_user_name ? `git config user.name ${sh(settings.git_user_name)}` : null,
      settings.git_user_email ? `git config user.email ${sh(settings.git_user_email)}` : null,
    ].filter(Boolean);
    if (commands.length) await runOrFail(agent, commands.join(' && '), 'Could not set the git identity', dir);
  }

  private async conversationRequest(task: StoredTask, settings: ResolvedSettings, model: string, projectDir: string) {
    const request = task.request;
    const secrets: Record<string, unknown> = {};
    for (const secret of await this.deps.secrets.resolve(task.userId)) {
      secrets[secret.name] = { kind: 'StaticSecret', value: secret.value };
    }
    if (request.git_provider) {
      // A lookup, not a copy: the agent always gets the user's current token.
      secrets.GIT_TOKEN = {
        kind: 'LookupSecret',
        url: `${this.deps.webUrl()}/api/v1/webhooks/secrets`,
        headers: { 'X-Access-Token': this.deps.accessTokens.sign(task.userId, request.git_provider) },
      };
    }
    return {
      conversation_id: task.conversationId,
      agent: {
        kind: 'Agent',
        llm: {
          usage_id: 'agent',
          model,
          ...(settings.llm_base_url ? { base_url: settings.llm_base_url } : {}),
          ...(settings.llm_api_key ? { api_key: settings.llm_api_key } : {}),
        },
        tools: this.deps.config.conversations.agentTools.map((name) => ({ name, params: {} })),
        mcp_config: toAgentMcpConfig(
          task.mcpConfig
            ? (JSON.parse(this.deps.box.decrypt(task.mcpConfig, mcpOverrideContext(task._id))) as McpConfig)
            : settings.mcp_config,
        ),
      },
      workspace: { kind: 'LocalWorkspace', working_dir: projectDir },
      // The agent server imports these to register the tools (it may run with OH_PRELOAD_TOOLS=false).
      tool_module_qualnames: Object.fromEntries(
        this.deps.config.conversations.agentTools.flatMap((name) => (TOOL_MODULES[name] ? [[name, TOOL_MODULES[name]]] : [])),
      ),
      confirmation_policy: { kind: settings.confirmation_mode ? 'AlwaysConfirm' : 'NeverConfirm' },
      ...(settings.max_iterations ? { max_iterations: settings.max_iterations } : {}),
      ...(request.initial_message ? { initial_message: request.initial_message } : {}),
      secrets,
    };
  }

  private async update(taskId: string, status: StartTaskStatus, extra: Record<string, unknown> = {}): Promise<void> {
    const result = await this.deps.models.StartTask.updateOne(
      { _id: taskId, leaseOwner: this.owner },
      { $set: { status, updatedAt: new Date(), ...extra } },
    );
    if (result.matchedCount === 0) throw new LeaseLost();
    this.updates.emit('update', taskId);
  }

  private async renewLease(taskId: string): Promise<void> {
    await this.deps.models.StartTask.updateOne(
      { _id: taskId, leaseOwner: this.owner },
      { $set: { leaseExpiresAt: new Date(Date.now() + this.deps.config.conversations.leaseMs) } },
    ).catch((error: unknown) => this.deps.log.warn({ err: error, taskId }, 'renewing a start-task lease failed'));
  }
}

/** Where the SDK's tools register themselves (tool names as the SDK registers them). */
const TOOL_MODULES: Record<string, string> = {
  terminal: 'openhands.tools.terminal.definition',
  file_editor: 'openhands.tools.file_editor.definition',
  task_tracker: 'openhands.tools.task_tracker.definition',
};

export const mcpOverrideContext = (taskId: string) => `task:${taskId}:mcp_config`;

/** Our MCP settings in the SDK's shape: {name: MCPServer}. */
function toAgentMcpConfig(mcp: McpConfig | null): Record<string, unknown> {
  if (!mcp) return {};
  const servers: Record<string, unknown> = {};
  mcp.sse_servers.forEach((s, i) => {
    servers[`sse_${i}`] = { url: s.url, transport: 'sse', ...(s.api_key ? { headers: { Authorization: `Bearer ${s.api_key}` } } : {}) };
  });
  mcp.shttp_servers.forEach((s, i) => {
    servers[`shttp_${i}`] = {
      url: s.url,
      transport: 'streamable-http',
      ...(s.timeout ? { timeout: s.timeout } : {}),
      ...(s.api_key ? { headers: { Authorization: `Bearer ${s.api_key}` } } : {}),
    };
  });
  for (const s of mcp.stdio_servers) servers[s.name] = { command: s.command, args: s.args, env: s.env };
  return servers;
}

async function runOrFail(agent: AgentServerClient, command: string, failure: string, cwd?: string): Promise<void> {
  const result = await agent.bash(command, { cwd, timeoutSeconds: 300 });
  if (result.exitCode !== 0) {
    const output = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
    throw new AppError('BAD_GATEWAY', `${failure}${output ? `: ${output}` : ''}`);
  }
}

/** Single-quotes a value for sh. */
function sh(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Installs a pre-commit hook that runs .openhands/pre-commit.sh, keeping an existing hook
 * that is not ours as pre-commit.local (run afterwards), as the reference does.
 */
const INSTALL_PRE_COMMIT_HOOK = `
if [ -f .openhands/pre-commit.sh ] && [ -d .git ]; then
  mkdir -p .git/hooks
  if [ -f .git/hooks/pre-commit ] && ! grep -q 'openhands-managed-hook' .git/hooks/pre-commit; then
    mv .git/hooks/pre-commit .git/hooks/pre-commit.local
  fi
  cat > .git/hooks/pre-commit <<'HOOK'
#!/bin/sh
# openhands-managed-hook
sh .openhands/pre-commit.sh || exit $?
if [ -x .git/hooks/pre-commit.local ]; then .git/hooks/pre-commit.local || exit $?; fi
HOOK
  chmod +x .git/hooks/pre-commit .openhands/pre-commit.sh
fi
`;
