// The 2026 reads of one V1 conversation's workspace and history (docs/conversations.md): a
// file's text, the files under a directory, its skills and hooks, git changes and diffs (the
// agent server's own shapes), and the trajectory export (a zip of the stored events). The
// reads that need the workspace resume a paused sandbox, as the V0 conversation page's do;
// skills and hooks do not (the reference answers them empty for a paused sandbox, and clients
// ask for them on every page), and the export needs no sandbox at all.
import { posix } from 'node:path';
import type { AppConversation } from '../../contract/app-conversations.schema.js';
import { AgentServerError } from '../agent-server/client.js';
import { AppError } from '../errors.js';
import { conversationIdOf } from './app-conversation-actions.service.js';
import type { EventsService } from './events/events.service.js';
import type { SandboxAccess, SandboxConnection } from '../sandbox/index.js';
import { projectDirOf, sh } from './start/workspace-scripts.js';
import { zipFiles } from './zip.js';

/** The largest file the file route serves (text for a viewer, not a download). */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;
/** The most paths the files route lists (a bounded find). */
export const MAX_LISTED_FILES = 5_000;
/** The largest trajectory export, before compression. */
export const MAX_EXPORT_BYTES = 64 * 1024 * 1024;
/** Where OpenHands' own sandboxes work, and clients assume they do. */
const CONVENTIONAL_ROOT = '/workspace/project';
/** Directories a listing does not descend into (generated or vendored). */
const PRUNED = ['.git', 'node_modules', '__pycache__', '.venv', 'venv', '.mypy_cache', '.pytest_cache', '.tox', 'lost+found'];
const GIT_STATUSES = new Set(['MOVED', 'ADDED', 'DELETED', 'UPDATED']);
const HOOK_EVENTS = ['pre_tool_use', 'post_tool_use', 'user_prompt_submit', 'session_start', 'session_end', 'stop'];

export class AppConversationFilesService {
  constructor(
    private readonly access: SandboxAccess,
    private readonly events: EventsService,
    private readonly conversation: (userId: string, id: string) => Promise<AppConversation | null>,
    private readonly maxEvents: number,
  ) {}

  /** A file's text (UTF-8; other bytes replaced). */
  async readFile(userId: string, rawId: string, filePath: string): Promise<string> {
    const id = conversationIdOf(rawId);
    const { connection, agent } = await this.access.running(userId, id);
    const path = inSandbox(connection.workingDir, filePath);
    const bytes = await agent.readFile(path, MAX_FILE_BYTES).catch((error: unknown) => {
      // The agent server answers 404 for a missing file and 400 for what is no file (a directory).
      if (error instanceof AgentServerError && (error.upstreamStatus === 404 || error.upstreamStatus === 400)) {
        throw new AppError('NOT_FOUND', `No such file: ${filePath}`, { reason: 'workspace_path_not_found' });
      }
      throw error;
    });
    if (!bytes)
      throw new AppError('PAYLOAD_TOO_LARGE', `${filePath} is larger than ${MAX_FILE_BYTES} bytes`, { reason: 'too_large_to_serve' });
    return bytes.toString('utf8');
  }

  /** Files under a directory, relative to it, sorted (generated and vendored directories left out); [] for no directory. */
  async listFiles(userId: string, rawId: string, dir: string): Promise<string[]> {
    const id = conversationIdOf(rawId);
    const { connection, agent } = await this.access.running(userId, id);
    const prune = PRUNED.map((name) => `-name ${sh(name)}`).join(' -o ');
    const script = `cd -- ${sh(inSandbox(connection.workingDir, dir))} 2>/dev/null || exit 0
find . \\( ${prune} \\) -prune -o -type f -print 2>/dev/null | head -n ${MAX_LISTED_FILES}`;
    const { stdout } = await agent.bash(script, { timeoutSeconds: 30 });
    return stdout
      .split('\n')
      .filter((line) => line.startsWith('./'))
      .map((line) => line.slice(2))
      .sort();
  }

  async gitChanges(userId: string, rawId: string, path: string, ref?: string) {
    const id = conversationIdOf(rawId);
    const { connection, agent } = await this.access.running(userId, id);
    const changes = await agent.gitChanges(inSandbox(connection.workingDir, path), ref);
    // A status this service does not know reads as a change of the file.
    return changes.map((c) => ({ status: (GIT_STATUSES.has(c.status) ? c.status : 'UPDATED') as 'UPDATED', path: c.path }));
  }

  async gitDiff(userId: string, rawId: string, path: string, ref?: string) {
    const id = conversationIdOf(rawId);
    const { connection, agent } = await this.access.running(userId, id);
    try {
      return await agent.gitDiff(inSandbox(connection.workingDir, path), ref);
    } catch (error) {
      // The agent server answers 400 for a path it cannot diff (missing, too large, outside a repository).
      if (error instanceof AgentServerError && error.upstreamStatus === 400) {
        throw new AppError('NOT_FOUND', `Error getting diff: ${error.upstreamDetail ?? path}`, { reason: 'workspace_path_not_found' });
      }
      throw error;
    }
  }

  async skills(userId: string, rawId: string) {
    const running = await this.runningNow(userId, conversationIdOf(rawId));
    if (!running) return { skills: [] };
    const skills = await running.agent.skills(running.projectDir);
    return {
      skills: skills.map((s) => ({
        name: String(s.name ?? ''),
        type: s.type === 'repo' || s.type === 'agentskills' ? (s.type as 'repo' | 'agentskills') : ('knowledge' as const),
        content: String(s.content ?? ''),
        triggers: Array.isArray(s.triggers) ? s.triggers.map(String) : [],
      })),
    };
  }

  /** The hooks of the project's .openhands/hooks.json as it is now, by event type. */
  async hooks(userId: string, rawId: string) {
    const running = await this.runningNow(userId, conversationIdOf(rawId));
    const config = running ? await running.agent.hooks(running.projectDir) : null;
    const hooks = HOOK_EVENTS.flatMap((eventType) => {
      const matchers = Array.isArray(config?.[eventType]) ? (config[eventType] as Record<string, unknown>[]) : [];
      if (matchers.length === 0) return [];
      return [{ event_type: eventType, matchers: matchers.map(toMatcher) }];
    });
    return { hooks };
  }

  /** The trajectory export: meta.json (the conversation) and one JSON file per stored event, zipped. */
  async download(userId: string, rawId: string) {
    const id = conversationIdOf(rawId);
    const conversation = await this.conversation(userId, id);
    if (!conversation) throw new AppError('NOT_FOUND', `Conversation ${rawId} not found`, { reason: 'conversation_not_found' });
    const events = await this.events.latest(userId, id, this.maxEvents);
    const files = [{ name: 'meta.json', content: JSON.stringify(conversation, null, 2) }];
    events.forEach((event, i) => {
      const eventId = typeof event.id === 'string' ? event.id.replace(/[^\w-]/g, '') : String(i);
      files.push({ name: `event_${String(i).padStart(6, '0')}_${eventId}.json`, content: JSON.stringify(event, null, 2) });
    });
    const size = files.reduce((sum, f) => sum + Buffer.byteLength(f.content), 0);
    if (size > MAX_EXPORT_BYTES) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The conversation's export would be ${size} bytes, over ${MAX_EXPORT_BYTES}`, {
        reason: 'too_large_to_serve',
      });
    }
    return { file_name: `conversation_${id}.zip`, content_base64: zipFiles(files).toString('base64') };
  }

  /** The agent server of a running conversation (no resume), or null while it is stopped or starting. */
  private async runningNow(userId: string, id: string) {
    try {
      const { conversation, connection, agent } = await this.access.running(userId, id, { resume: false });
      return { agent, projectDir: projectDirFor(connection, conversation.selected_repository) };
    } catch (error) {
      if (error instanceof AppError && error.reason === 'conversation_not_running') return null;
      throw error;
    }
  }
}

/**
 * A client's path inside the sandbox: under the conventional root it names the working directory;
 * relative ones start there. Whatever it resolves to must stay in the working directory: without
 * isolation (SANDBOX_ISOLATION=none) the agent server reads the host's files as the service's
 * user, and `../../encryption.key` or `/etc/shadow` would reach them.
 */
export function inSandbox(workingDir: string, path: string): string {
  const root = posix.normalize(workingDir).replace(/\/+$/, '');
  const named =
    path === CONVENTIONAL_ROOT || path.startsWith(`${CONVENTIONAL_ROOT}/`)
      ? root + path.slice(CONVENTIONAL_ROOT.length)
      : path.startsWith('/')
        ? path
        : `${root}/${path}`;
  const resolved = posix.normalize(named).replace(/\/+$/, '') || '/';
  if (resolved !== root && !resolved.startsWith(`${root}/`)) {
    throw new AppError('NOT_FOUND', `No such file in the workspace: ${path}`, { reason: 'workspace_path_not_found' });
  }
  return resolved;
}

function projectDirFor(connection: SandboxConnection, repository: string | null | undefined): string {
  return repository ? projectDirOf(connection.workingDir, repository) : connection.workingDir;
}

function toMatcher(matcher: Record<string, unknown>) {
  const hooks = Array.isArray(matcher.hooks) ? (matcher.hooks as Record<string, unknown>[]) : [];
  return {
    matcher: typeof matcher.matcher === 'string' ? matcher.matcher : '*',
    hooks: hooks.map((hook) => ({
      type: typeof hook.type === 'string' ? hook.type : 'command',
      command: typeof hook.command === 'string' ? hook.command : '',
      timeout: typeof hook.timeout === 'number' ? hook.timeout : 60,
      async: hook.async === true || hook.async_ === true,
    })),
  };
}
