// A conversation's workspace as the conversation page reads it (FRONTEND facts §2.18–2.25),
// asked of the agent server in its sandbox (sandbox-access.ts decides what happens when that
// is not possible). The workspace root is the sandbox's working directory; a repository is
// cloned into <root>/<repository name>.
import { inMegabytes, MAX_AGENT_EVENTS_BYTES } from '../../agent-server/bounded-read.js';
import { AgentServerError } from '../../agent-server/client.js';
import { AppError } from '../../errors.js';
import type { EventsService } from '../events/events.service.js';
import type { SandboxAccess } from '../../sandbox/index.js';
import { listEntries, parseListing, projectDirOf } from '../start/workspace-scripts.js';

/** Names the reference never lists (besides what the workspace's .gitignore ignores). */
const HIDDEN_ENTRIES = new Set(['.git/', '.DS_Store', 'node_modules/', '__pycache__/', 'lost+found/', '.vscode/']);
/** The most events a trajectory holds (a download, read page by page from the agent server). */
const TRAJECTORY_MAX = 10_000;
const STATUS: Record<string, 'M' | 'A' | 'D' | 'R' | 'U'> = { UPDATED: 'M', ADDED: 'A', DELETED: 'D', MOVED: 'R' };

export class ConversationWorkspaceService {
  constructor(
    private readonly access: SandboxAccess,
    private readonly events: EventsService,
  ) {}

  /** The repository's microagents (skills), repo ones first, as the agent server finds them. */
  async microagents(userId: string, conversationId: string) {
    const { conversation, connection, agent } = await this.access.running(userId, conversationId);
    const projectDir = conversation.selected_repository
      ? projectDirOf(connection.workingDir, conversation.selected_repository)
      : connection.workingDir;
    const skills = await agent.skills(projectDir);
    const microagents = skills.map((s) => ({
      name: String(s.name ?? ''),
      type: s.type === 'repo' ? ('repo' as const) : ('knowledge' as const),
      content: String(s.content ?? ''),
      triggers: Array.isArray(s.triggers) ? s.triggers.map(String) : [],
      inputs: [],
      tools: [],
    }));
    return { microagents: [...microagents.filter((m) => m.type === 'repo'), ...microagents.filter((m) => m.type !== 'repo')] };
  }

  /** The entries of a workspace directory (directories end with "/"), without ignored ones; [] when it does not exist. */
  async listFiles(userId: string, conversationId: string, path: string | undefined): Promise<string[]> {
    const { connection, agent } = await this.access.running(userId, conversationId);
    const relative = (path ?? '').replace(/^\/+|\/+$/g, '');
    if (relative.split('/').includes('..')) {
      throw new AppError('NOT_FOUND', `No such directory in the workspace: ${relative}`, { reason: 'workspace_path_not_found' });
    }
    const dir = relative ? `${connection.workingDir}/${relative}` : connection.workingDir;
    const listing = parseListing((await agent.bash(listEntries(dir), { timeoutSeconds: 30 })).stdout);
    return listing.entries
      .filter((entry) => !HIDDEN_ENTRIES.has(entry) && !listing.ignored.has(entry))
      .map((entry) => (relative ? `${relative}/${entry}` : entry));
  }

  /**
   * Changes against each repository's default branch, plus untracked files, of the workspace
   * root and of the repositories directly below it (the agent server prefixes their paths).
   */
  async gitChanges(userId: string, conversationId: string) {
    const { connection, agent } = await this.access.running(userId, conversationId);
    const changes = await agent.gitChanges(connection.workingDir);
    return changes.map((c) => ({ status: STATUS[c.status] ?? ('M' as const), path: c.path }));
  }

  /** Both sides of one changed file (a path as git/changes lists it); "" for a side that does not exist. */
  async gitDiff(userId: string, conversationId: string, path: string) {
    const { connection, agent } = await this.access.running(userId, conversationId);
    const relative = path.replace(/^\/+/, '');
    if (relative.split('/').includes('..')) {
      throw new AppError('NOT_FOUND', `Error getting diff: ${relative} is outside the workspace`, { reason: 'workspace_path_not_found' });
    }
    try {
      const diff = await agent.gitDiff(`${connection.workingDir}/${relative}`);
      return { modified: diff.modified ?? '', original: diff.original ?? '' };
    } catch (error) {
      // The agent server answers 400 for a path it cannot diff (missing, too large, outside a repository).
      if (error instanceof AgentServerError && error.upstreamStatus === 400) {
        throw new AppError('NOT_FOUND', `Error getting diff: ${error.upstreamDetail ?? relative}`, { reason: 'workspace_path_not_found' });
      }
      throw error;
    }
  }

  /** Writes each file, as sent, to <workspace root>/<its name>; a file that cannot be written is skipped with the reason. */
  async uploadFiles(userId: string, conversationId: string, files: { name: string; content: Uint8Array }[]) {
    const { connection, agent } = await this.access.running(userId, conversationId);
    const uploaded_files: string[] = [];
    const skipped_files: { name: string; reason: string }[] = [];
    for (const file of files) {
      const name = file.name.split(/[\\/]/).pop() ?? '';
      if (!name || name === '.' || name === '..') {
        skipped_files.push({ name: file.name, reason: 'Invalid file name' });
        continue;
      }
      const target = `${connection.workingDir}/${name}`;
      try {
        await agent.uploadFile(target, file.content);
        uploaded_files.push(target);
      } catch (error) {
        // The agent server refusing this file (4xx: a bad path, too large) skips it; an agent
        // server that cannot be reached or answers anything else fails the whole upload.
        const refused =
          error instanceof AgentServerError && error.upstreamStatus !== null && error.upstreamStatus >= 400 && error.upstreamStatus < 500;
        if (!refused) throw error;
        skipped_files.push({ name: file.name, reason: error.message });
      }
    }
    return { uploaded_files, skipped_files };
  }

  /**
   * Every event of the conversation, oldest first: from its agent server while it runs, else
   * (stopped, gone) the events stored from its webhooks.
   */
  async trajectory(userId: string, conversationId: string) {
    let running;
    try {
      // A download, which the stored events serve as well: not worth resuming a sandbox for.
      running = await this.access.running(userId, conversationId, { resume: false });
    } catch (error) {
      if (error instanceof AppError && error.code === 'CONFLICT') {
        return { trajectory: await this.events.latest(userId, conversationId, TRAJECTORY_MAX) };
      }
      throw error;
    }
    const trajectory: Record<string, unknown>[] = [];
    let pageId: string | null = null;
    let bytes = 0;
    do {
      const page = await running.agent.searchEvents(conversationId, pageId);
      // Each page is bounded on its own; so are the pages together (a page count alone is not).
      bytes += page.bytes;
      if (bytes > MAX_AGENT_EVENTS_BYTES) {
        throw new AgentServerError(200, `Agent server answered events of more than ${inMegabytes(MAX_AGENT_EVENTS_BYTES)} in all`);
      }
      trajectory.push(...page.items);
      pageId = page.next_page_id;
    } while (pageId && trajectory.length < TRAJECTORY_MAX);
    return { trajectory: trajectory.slice(0, TRAJECTORY_MAX) };
  }

  /**
   * A prompt worth remembering, drawn from the events around `eventId` (its position in the
   * stored history): the conversation's own agent writes it (the reference asks the user's LLM
   * through the running agent loop), answering inside <update_prompt> tags.
   */
  async rememberPrompt(userId: string, conversationId: string, eventId: number) {
    await this.access.conversation(userId, conversationId);
    const around = await this.events.around(userId, conversationId, eventId, 4, 5);
    if (!around)
      throw new AppError('NOT_FOUND', `Event ${eventId} not found in conversation ${conversationId}`, { reason: 'event_not_found' });
    const { agent } = await this.access.running(userId, conversationId);
    const excerpt = around.map(({ seq, event }) => `${seq === eventId ? '>>' : '  '} ${describeEvent(event)}`).join('\n');
    const answer = await agent.askAgent(
      conversationId,
      'Below is an excerpt of this conversation (the marked event is the one the user points at).\n\n' +
        `${excerpt}\n\n` +
        'Write one short instruction that an agent working in this repository in the future should remember, ' +
        'based on what the user wanted here. Answer with the instruction inside <update_prompt></update_prompt> tags.',
    );
    const tagged = /<update_prompt>([\s\S]*?)<\/update_prompt>/.exec(answer);
    return { status: 'success' as const, prompt: (tagged?.[1] ?? answer).trim() };
  }
}

/** One line about an event: who, what kind, and its text (message, thought, command or output), shortened. */
function describeEvent(event: Record<string, unknown>): string {
  const texts = (parts: unknown) =>
    Array.isArray(parts) ? parts.map((p) => (p && typeof p === 'object' ? (p as { text?: unknown }).text : undefined)) : [];
  const message = (event.llm_message as { content?: unknown } | undefined)?.content;
  const action = event.action as { command?: unknown; message?: unknown } | undefined;
  const observation = event.observation as { content?: unknown } | undefined;
  const candidates = [...texts(message), ...texts(event.thought), action?.command, action?.message, ...texts(observation?.content)];
  const text = candidates.filter((t): t is string => typeof t === 'string' && t.trim().length > 0).join(' ');
  return `[${String(event.source ?? '?')}] ${String(event.kind ?? 'Event')}${text ? `: ${text.replace(/\s+/g, ' ').slice(0, 400)}` : ''}`;
}
