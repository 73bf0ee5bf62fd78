// The steps of a start task (the reference's, with our differences; docs/conversations.md), run by the lease queue. Every step
// whose record a later attempt needs (the sandbox) is persisted before the work goes on; the
// progress statuses between are written in order behind the work (task-steps.ts). Every step is idempotent,
// so a task whose worker died is redone from the top by whoever claims it next: an existing sandbox is reused, an existing
// clone is kept, and the agent-server conversation id was chosen when the task was created.
// A task that keeps failing that way, or outlives its deadline, ends in ERROR with the
// reason: none stays in a working state.
import { StartTaskStatusSchema, type SandboxSource } from '../../../contract/app-conversations.schema.js';
import type { AccessTokens } from '../../access-token.js';
import { AgentServerClient } from '../../agent-server/client.js';
import type { Config } from '../../config/config.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { SandboxesService, SandboxLifecycle } from '../../sandbox/index.js';
import type { GitProvidersService } from '../../git/git-providers.service.js';
import type { SecretsService } from '../../services/secrets.service.js';
import { hasUsableLlmKey, LLM_KEY_MISSING, type ResolvedSettings, type SettingsService } from '../../services/settings/settings.service.js';
import type { OrgLlmDefaults } from '../../organizations/index.js';
import { legacyAgentServer, startConversationRequest } from './agent-request.js';
import { conversationSecrets } from './conversation-secrets.js';
import type { ConversationLifecycleEvents } from '../conversation-lifecycle-events.js';
import type { PendingMessages } from '../pending-messages.js';
import { withProfile, type AgentProfiles } from '../profiles.js';
import { LeaseLost } from '../../db/lease-queue.js';
import { StartTimings } from './start-timings.js';
import { TaskSteps } from './task-steps.js';
import type { ConversationStore, StartTask } from '../records/store.js';
import * as scripts from './workspace-scripts.js';
import type { AgentLlms } from '../../llm-gateway/agent-llm.js';
import type { McpWith } from '../../services/settings/settings-secrets.js';

const SETUP_SCRIPT_TIMEOUT_S = 600;
const CAPACITY_RETRY_MS = 1_000;

export interface StartWorkflowDeps {
  store: ConversationStore;
  settings: SettingsService;
  gitProviders: GitProvidersService;
  secrets: SecretsService;
  sandboxes: SandboxesService;
  lifecycle: SandboxLifecycle;
  accessTokens: AccessTokens;
  metrics: Metrics;
  config: Config;
  /** This service's base URL as sandboxes reach it (the GIT_TOKEN lookup). */
  webUrl: () => string;
  log: Logger;
  profiles: AgentProfiles;
  /** Messages queued while the conversation started, delivered once it is READY. */
  pendingMessages: Pick<PendingMessages, 'deliver' | 'drop'>;
  /** The task's statuses and the conversation's start ending, for the lifecycle webhooks. */
  events: Pick<ConversationLifecycleEvents, 'taskChanged' | 'conversationChanged'>;
  /** The agent's LLM config: through the LLM gateway, or the owner's own where it is off. */
  agentLlms: AgentLlms;
  /** A team organisation's LLM defaults, key opened (docs/organizations.md); null when it has none. */
  orgLlm: (orgId: string) => Promise<OrgLlmDefaults | null>;
  /** A team organisation's secrets, opened. */
  orgSecrets: (orgId: string) => Promise<{ name: string; value: string; description: string }[]>;
}

export class StartWorkflow {
  constructor(private readonly deps: StartWorkflowDeps) {}

  /** The lease queue's worker: takes a claimed task to READY, or to ERROR with the reason. */
  async run(task: StartTask, owner: string): Promise<void> {
    const { maxAttempts, deadlineMs } = this.deps.config.conversations;
    const log = this.deps.log.child({ taskId: task._id, userId: task.userId });
    const timings = new StartTimings();
    timings.add('queue', Date.now() - task.createdAt.getTime());
    const steps = new TaskSteps(task, owner, this.deps, timings, (entered, outcome, source) => this.observe(entered, outcome, source));
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
      await this.execute(task, steps, log, timings);
    } catch (error) {
      await steps.settled(); // no write of this attempt lands after it ends
      if (error instanceof LeaseLost) throw error;
      // An outage is no verdict on the task: its lease lapses and the task is redone from the
      // top (its steps are idempotent) once the database is back.
      if (error instanceof AppError && error.reason === 'database_unavailable') throw new LeaseLost('database unavailable');
      const detail = error instanceof AppError ? error.message : 'Unexpected error while starting the conversation';
      if (!(error instanceof AppError)) log.error({ err: error }, 'start task failed');
      else log.info({ detail }, 'start task failed');
      // The conversation first: a reader who sees the task ended sees its conversation failed.
      await this.deps.store.markStartFailed(task).catch(() => {});
      const ended = await steps.step('ERROR', { detail, leaseOwner: null, leaseExpiresAt: null }).then(
        () => true,
        () => false,
      );
      // Not ended here (another worker holds the task now): its conversation is starting again.
      if (!ended) await this.deps.store.unmarkStartFailed(task).catch(() => {});
      if (ended) {
        await this.deps.events.conversationChanged('conversation.status_changed', task.userId, task.conversationId);
        // A slot claimed at the request goes back unless its sandbox runs; queued messages have no conversation to go to.
        if (task.reservedSandboxId) await this.deps.sandboxes.slots.dropReservation(task.userId, task.reservedSandboxId).catch(() => {});
        await this.deps.pendingMessages.drop(task.conversationId).catch(() => {});
      }
    }
  }

  private async execute(task: StartTask, steps: TaskSteps, log: Logger, timings: StartTimings): Promise<void> {
    const request = task.request;
    // Started in a team organisation with LLM defaults: its model, base URL and key replace the
    // member's own (who then needs no settings of their own); an agent profile still applies on top.
    const orgLlm = task.orgId ? await timings.time('organization', this.deps.orgLlm(task.orgId)) : null;
    const userSettings =
      (await timings.time('settings', this.deps.settings.resolve(task.userId))) ?? (orgLlm ? this.deps.settings.blank() : null);
    if (!userSettings) throw new AppError('BAD_REQUEST', 'Settings not found: save your LLM settings first');
    // The profile the request resolved to (its id was recorded then); one deleted since fails the start.
    const profile = request.agent_profile_id ? await this.deps.profiles.resolve(task.userId, request.agent_profile_id) : null;
    if (request.agent_profile_id && !profile) throw new AppError('NOT_FOUND', `Agent profile ${request.agent_profile_id} no longer exists`);
    const settings = withProfile(orgLlm ? withOrgLlm(userSettings, orgLlm) : userSettings, profile);
    const model = request.llm_model || settings.llm_model;
    if (!model) throw new AppError('BAD_REQUEST', 'No LLM model configured: set llm_model in your settings');
    if (!hasUsableLlmKey(settings, model)) throw new AppError('BAD_REQUEST', LLM_KEY_MISSING, { reason: 'llm_key_missing' });

    // 1. Sandbox: reuse the one recorded by an earlier attempt or given in the request (resumed
    // if paused), else a warm one from the pool or a cold start.
    await steps.step('WAITING_FOR_SANDBOX');
    let sandboxId = task.sandbox_id ?? request.sandbox_id ?? null;
    let source: SandboxSource = task.sandbox_source ?? 'existing';
    if (!sandboxId && task.reservedSandboxId && task.attempts > 1) {
      if (await this.startedEarlier(task.userId, task.reservedSandboxId)) [sandboxId, source] = [task.reservedSandboxId, 'cold_start'];
    }
    // The conversation's secrets: in the start request, and in a new sandbox's environment (its hooks read them).
    const secrets = await timings.time('secrets', conversationSecrets(task, this.deps));
    if (!sandboxId) {
      const deadline = task.createdAt.getTime() + this.deps.config.conversations.deadlineMs;
      // With SANDBOX_AT_LIMIT=pause-oldest a start also waits for room (sandboxes started within the
      // last minute are not paused for it: their own start may be under way).
      const waitFor = this.deps.config.sandbox.atLimit === 'pause-oldest' ? WAITS_AT_LIMIT : WAITS;
      const acquired = await timings.time('sandbox claim', () =>
        whenCapacity(
          () =>
            this.deps.sandboxes.acquire(task.userId, task.sandboxSpecId, task.reservedSandboxId, {
              env: Object.fromEntries(secrets.map((s) => [s.name, s.value])),
            }),
          deadline,
          waitFor,
        ),
      );
      sandboxId = acquired.info.id;
      source = acquired.source;
    }
    await steps.step('WAITING_FOR_SANDBOX', { sandbox_id: sandboxId, sandbox_source: source });
    const sandbox = await timings
      .time('sandbox running', this.deps.lifecycle.ensureRunning(task.userId, sandboxId))
      .catch((error: unknown) => {
        if (error instanceof AppError && error.reason === 'sandbox_not_found')
          throw new AppError('NOT_FOUND', `Sandbox not found: ${sandboxId}`);
        throw error;
      });
    await timings.time('conversation record', this.deps.store.setConversationSandbox(task, sandboxId));
    // The start is a use of the sandbox from here to the end, however long the setup takes.
    const release = this.deps.lifecycle.usage.hold(sandboxId);
    try {
      const agent = new AgentServerClient(sandbox.internalUrl ?? sandbox.publicUrl!, sandbox.sessionKey);

      // 2. Repository.
      steps.progress('PREPARING_REPOSITORY');
      const projectDir = await timings.time('repository', this.prepareRepository(task, settings, agent, sandbox.workingDir));

      // 3. Setup script (its failure is reported in the log, not fatal, as in the reference).
      steps.progress('RUNNING_SETUP_SCRIPT');
      const setup = await timings.time(
        'setup script',
        agent.bash(scripts.SETUP_SCRIPT, { cwd: projectDir, timeoutSeconds: SETUP_SCRIPT_TIMEOUT_S }),
      );
      if (setup.exitCode !== 0) log.warn({ exitCode: setup.exitCode }, '.openhands/setup.sh failed');

      // 4. Git hooks, and the project's agent hooks (.openhands/hooks.json, which the agent server
      // runs only when the start request carries them) read meanwhile.
      steps.progress('SETTING_UP_GIT_HOOKS');
      const [, hookConfig] = await Promise.all([
        timings.time('git hooks', agent.bash(scripts.INSTALL_PRE_COMMIT_HOOK, { cwd: projectDir, timeoutSeconds: 60 })),
        legacyAgentServer(sandbox.agentServerVersion) ? null : timings.time('hooks', agent.hooks(projectDir)),
      ]);

      // 5. The agent-server conversation (idempotent: fixed id; 200 if it already exists).
      steps.progress('STARTING_CONVERSATION', { agent_server_url: sandbox.publicUrl });
      const at = { projectDir, agentServerVersion: sandbox.agentServerVersion, sandboxId, hookConfig, secrets };
      const conversation = await timings.time('conversation request', this.conversationRequest(task, settings, model, at));
      await timings.time('agent conversation', agent.startConversation(conversation));

      if (!(await timings.time('conversation saved', this.deps.store.saveStartedConversation(task, sandboxId, model))))
        throw new LeaseLost(); // deleted meanwhile
      await steps.step('READY', { app_conversation_id: task.conversationId, leaseOwner: null, leaseExpiresAt: null });
      await this.deps.events.conversationChanged('conversation.status_changed', task.userId, task.conversationId);
      log.info({ conversationId: task.conversationId, timings: timings.toJSON() }, 'conversation ready');
      await this.deps.pendingMessages.deliver(task.conversationId, agent).catch((error: unknown) => {
        log.warn({ err: error }, 'delivering queued messages failed');
      });
    } finally {
      release();
    }
  }

  /**
   * Whether an earlier attempt created the reserved sandbox and stopped (a restart) before
   * recording it here. One whose workspace was never made (the restart came between its record
   * and its start) held nothing: it is dropped, and this attempt launches it anew.
   */
  private async startedEarlier(userId: string, reservedId: string): Promise<boolean> {
    const [earlier] = await this.deps.sandboxes.batchGet(userId, [reservedId]);
    if (!earlier) return false;
    try {
      await this.deps.lifecycle.ensureRunning(userId, reservedId);
      return true;
    } catch (error) {
      if (!(error instanceof AppError && error.reason === 'sandbox_workspace_gone')) throw error;
      await this.deps.sandboxes.delete(userId, reservedId);
      return false;
    }
  }

  /** Phase durations (entry to the next entry) and the whole start, by sandbox source. */
  private observe(entered: ReadonlyMap<string, number>, outcome: 'READY' | 'ERROR', source: SandboxSource | null): void {
    const { startPhaseDuration, startDuration } = this.deps.metrics;
    const sandbox_source = source ?? 'none';
    const times = StartTaskStatusSchema.options.filter((s) => entered.has(s)).map((s) => [s, entered.get(s)!] as const);
    if (outcome === 'READY') {
      for (let i = 0; i + 1 < times.length; i++) {
        const [phase, at] = times[i]!;
        startPhaseDuration.observe({ phase, sandbox_source }, Math.max(0, times[i + 1]![1] - at) / 1000);
      }
    }
    const first = times[0]?.[1];
    if (first !== undefined) startDuration.observe({ outcome, sandbox_source }, Math.max(0, entered.get(outcome)! - first) / 1000);
  }

  /** Clones (or initialises) the project; returns its directory, where the agent works. */
  private async prepareRepository(task: StartTask, settings: ResolvedSettings, agent: AgentServerClient, workingDir: string) {
    const request = task.request;
    if (!request.selected_repository) {
      // One command (each costs a request and a poll): the directory, `git init`, the identity.
      const identity = scripts.gitIdentity(settings.git_user_name, settings.git_user_email);
      const result = await agent.bash(scripts.prepareEmptyWorkspace(workingDir, identity), { timeoutSeconds: 300 });
      if (result.exitCode !== 0) throw commandFailed(scripts.emptyWorkspaceFailure(result.exitCode), result);
      return workingDir;
    }
    await runOrFail(agent, scripts.makeDir(workingDir), 'Could not create the working directory');
    const repository = request.selected_repository;
    const access = await this.deps.gitProviders.repositoryAccess(task.userId, repository, request.git_provider ?? null);
    if (!access) {
      throw new AppError('UNAUTHORIZED', `Git provider authentication issue when getting remote URL: cannot access ${repository}`, {
        reason: 'repository_access_denied',
      });
    }
    const projectDir = scripts.projectDirOf(workingDir, repository);
    // The token goes to git through a one-shot credential helper file (sent by file upload, so
    // it appears in no command line or bash event) and is never written to the repository's config.
    const cloned = await agent.bash(scripts.isCloned(projectDir), {});
    if (cloned.exitCode !== 0) {
      const helper = scripts.credentialHelperPath(workingDir, task._id);
      await agent.uploadFile(helper, scripts.credentialHelper(access.username, access.password));
      try {
        await runOrFail(agent, scripts.cloneWithHelper(helper, access.cloneUrl, projectDir), `Could not clone ${access.cloneUrl}`);
      } finally {
        await agent.bash(scripts.removeFile(helper), {}).catch(() => {});
      }
    }
    await configureIdentity(agent, settings, projectDir);
    const branch = request.selected_branch;
    const failure = `Could not check out ${branch ? `branch ${branch}` : 'a new workspace branch'}`;
    await runOrFail(agent, scripts.checkout(branch, task._id), failure, projectDir);
    return projectDir;
  }

  /** The agent server's start request; `agentServerVersion` (the sandbox spec's, where it names one) picks tool names. */
  private async conversationRequest(
    task: StartTask,
    settings: ResolvedSettings,
    model: string,
    at: {
      projectDir: string;
      agentServerVersion: string | null;
      sandboxId: string;
      hookConfig: Record<string, unknown> | null;
      secrets: { name: string; value: string }[];
    },
  ) {
    const { request } = task;
    const { llm, mcp } = await this.deps.agentLlms.forStart(
      task.conversationId,
      { userId: task.userId, sandboxId: at.sandboxId },
      { model, baseUrl: settings.llm_base_url ?? null, apiKey: settings.llm_api_key ?? null },
      (this.deps.store.unseal(task, 'mcpConfig') ?? settings.mcp_config) as McpWith<string | null> | null,
    );
    const provider = request.git_provider;
    return startConversationRequest({
      conversationId: task.conversationId,
      request,
      settings,
      llm,
      tools: this.deps.config.conversations.agentTools,
      mcp,
      projectDir: at.projectDir,
      secrets: at.secrets,
      gitTokenLookup: provider
        ? { url: `${this.deps.webUrl()}/api/v1/webhooks/secrets`, accessToken: this.deps.accessTokens.sign(task.userId, provider) }
        : null,
      agentServerVersion: at.agentServerVersion,
      hookConfig: at.hookConfig,
    });
  }
}

const WAITS = new Set(['sandbox_starts_busy']);
const WAITS_AT_LIMIT = new Set(['sandbox_starts_busy', 'sandbox_limit_reached']);

/** A start waits for a free sandbox-start slot where a request would get a 503 (and, when it may, for room at the limit). */
async function whenCapacity<T>(operation: () => Promise<T>, deadline: number, waitFor: Set<string>): Promise<T> {
  for (;;) {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof AppError && waitFor.has(error.reason ?? '')) || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, CAPACITY_RETRY_MS));
    }
  }
}

async function configureIdentity(agent: AgentServerClient, settings: ResolvedSettings, dir: string): Promise<void> {
  const identity = scripts.gitIdentity(settings.git_user_name, settings.git_user_email);
  if (identity) await runOrFail(agent, identity, 'Could not set the git identity', dir);
}

async function runOrFail(agent: AgentServerClient, command: string, failure: string, cwd?: string): Promise<void> {
  const result = await agent.bash(command, { cwd, timeoutSeconds: 300 });
  if (result.exitCode !== 0) throw commandFailed(failure, result);
}

/** The failure with the last lines the command printed. */
function commandFailed(failure: string, result: { stdout: string; stderr: string }): AppError {
  const output = (result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ');
  return new AppError('BAD_GATEWAY', `${failure}${output ? `: ${output}` : ''}`);
}

/** The organisation's LLM defaults over a member's settings: what it sets replaces theirs. */
function withOrgLlm(settings: ResolvedSettings, org: OrgLlmDefaults): ResolvedSettings {
  return {
    ...settings,
    ...(org.model ? { llm_model: org.model } : {}),
    ...(org.model || org.baseUrl ? { llm_base_url: org.baseUrl } : {}),
    ...(org.apiKey ? { llm_api_key: org.apiKey } : {}),
  };
}
