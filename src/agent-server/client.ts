// A small client for the agent server inside a sandbox (the reference's; observed shapes in
// docs/agent-server-notes.md). Every call carries the sandbox's session key and gives up
// after the client's timeout; every answer is read through bounded-read.ts. Failures are
// AgentServerErrors: unreachable or no answer in time → SERVICE_UNAVAILABLE (status null); any
// other answer than 2xx (redirects are not followed), a 2xx whose body is not JSON of the
// expected shape, larger than its bound or unfinished in time → BAD_GATEWAY naming the agent server.
// A sandbox's agent server is the user's to change, so nothing it answers is trusted as is.
// Messages never repeat what was sent (the agent server's validation errors echo the input).
import { z } from 'zod';
import { AppError } from '../errors.js';
import { BodyNotRead, discard, inMegabytes, MAX_AGENT_ERROR_BYTES, MAX_AGENT_JSON_BYTES, readBounded } from './bounded-read.js';
import { errorSummary, stringsOf } from './error-summary.js';

export { errorSummary } from './error-summary.js';

export class AgentServerError extends AppError {
  constructor(
    /** The agent server's HTTP status; null when it could not be reached in time. */
    readonly upstreamStatus: number | null,
    message: string,
    /** The agent server's own error text (its "detail"), when it gave one. */
    readonly upstreamDetail: string | null = null,
  ) {
    super(upstreamStatus === null ? 'SERVICE_UNAVAILABLE' : 'BAD_GATEWAY', message, {
      reason: upstreamStatus === null ? 'agent_server_unavailable' : 'agent_server_failed',
    });
  }
}

export interface GitChange {
  status: string;
  path: string;
}

export interface BashResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface AgentConversationInfo {
  id: string;
  title?: string | null;
  execution_status?: string | null;
  [key: string]: unknown;
}

// A command's end is polled for: soon at first (most set-up commands take tens of
// milliseconds, and a start runs several), then less often.
const FIRST_POLL_MS = 10;
const POLL_MS = 250;

// The shapes this service relies on (the agent server's models, extra fields allowed).
const json = z.record(z.string(), z.unknown());
const conversationInfo = z.looseObject({ id: z.string(), title: z.string().nullish(), execution_status: z.string().nullish() });
const SHAPE = {
  bashStarted: z.looseObject({ id: z.string().min(1) }),
  bashOutputs: z.looseObject({
    items: z.array(
      z.looseObject({
        order: z.number(),
        exit_code: z.number().int().nullable(),
        stdout: z.string().nullish(),
        stderr: z.string().nullish(),
      }),
    ),
  }),
  uploaded: z.looseObject({ file_size: z.number() }),
  conversation: conversationInfo,
  conversations: z.array(conversationInfo.nullable()),
  events: z.looseObject({ items: z.array(json), next_page_id: z.string().nullish() }),
  answer: z.looseObject({ response: z.string() }),
  changes: z.array(z.looseObject({ status: z.string(), path: z.string() })),
  diff: z.looseObject({ modified: z.string().nullable(), original: z.string().nullable() }),
  skills: z.looseObject({ skills: z.array(json) }),
  success: z.looseObject({ success: z.boolean() }),
  hooks: z.looseObject({ hook_config: json.nullable() }),
};

/** A message as the agent server's SendMessageRequest takes it. */
export interface AgentMessage {
  role: string;
  content: unknown[];
  run: boolean;
}

export class AgentServerClient {
  constructor(
    readonly baseUrl: string,
    private readonly sessionKey: string,
    private readonly requestTimeoutMs = 30_000,
  ) {}

  /** Runs a shell command (sh) and waits for it; output arrives when the command ends. */
  async bash(command: string, opts: { cwd?: string; timeoutSeconds?: number } = {}): Promise<BashResult> {
    const timeout = opts.timeoutSeconds ?? 120;
    const body = { command, timeout, ...(opts.cwd ? { cwd: opts.cwd } : {}) };
    const started = await this.request('POST', '/api/bash/start_bash_command', SHAPE.bashStarted, body);
    const deadline = Date.now() + (timeout + 30) * 1000;
    for (let wait = FIRST_POLL_MS; ; wait = Math.min(wait * 2, POLL_MS)) {
      const page = await this.request(
        'GET',
        `/api/bash/bash_events/search?command_id__eq=${encodeURIComponent(started.id)}&limit=100`,
        SHAPE.bashOutputs,
      );
      const done = page.items.find((i) => i.exit_code !== null);
      if (done) {
        const items = [...page.items].sort((a, b) => a.order - b.order);
        return {
          exitCode: done.exit_code!,
          stdout: items.map((i) => i.stdout ?? '').join(''),
          stderr: items.map((i) => i.stderr ?? '').join(''),
        };
      }
      if (Date.now() > deadline) throw new AgentServerError(null, `Agent server did not finish a command within ${timeout} s`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Writes a file (multipart upload): file content never appears in a command line. */
  async uploadFile(path: string, content: string | Uint8Array): Promise<void> {
    const form = new FormData();
    form.append('file', new Blob([content]), 'file');
    await this.request('POST', `/api/file/upload?path=${encodeURIComponent(path)}`, SHAPE.uploaded, form);
  }

  async startConversation(body: unknown): Promise<AgentConversationInfo> {
    return this.request('POST', '/api/conversations', SHAPE.conversation, body);
  }

  async getConversations(ids: string[]): Promise<(AgentConversationInfo | null)[]> {
    const query = ids.map((id) => `ids=${encodeURIComponent(id)}`).join('&');
    return this.request('GET', `/api/conversations?${query}`, SHAPE.conversations);
  }

  async deleteConversation(id: string): Promise<void> {
    await this.request('DELETE', `/api/conversations/${id}`, null);
  }

  async setTitle(id: string, title: string): Promise<void> {
    await this.request('PATCH', `/api/conversations/${id}`, null, { title });
  }

  async getConversation(id: string): Promise<AgentConversationInfo> {
    return this.request('GET', `/api/conversations/${id}`, SHAPE.conversation);
  }

  /** One page of the conversation's events, oldest first, and its size as read (bytes). */
  async searchEvents(
    id: string,
    pageId: string | null,
    limit = 100,
  ): Promise<{ items: Record<string, unknown>[]; next_page_id: string | null; bytes: number }> {
    const page = pageId ? `&page_id=${encodeURIComponent(pageId)}` : '';
    const path = `/api/conversations/${id}/events/search?limit=${limit}${page}`;
    const { value, bytes } = await this.sized('GET', path, SHAPE.events);
    return { items: value.items, next_page_id: value.next_page_id ?? null, bytes };
  }

  /** A one-off question to the conversation's agent, with the conversation as context. */
  async askAgent(id: string, question: string): Promise<string> {
    return (await this.request('POST', `/api/conversations/${id}/ask_agent`, SHAPE.answer, { question })).response;
  }

  /** Changes of the repository at an absolute path and of the repositories directly below it ([] for none), against `ref` if given. */
  async gitChanges(repoPath: string, ref?: string): Promise<GitChange[]> {
    return this.request('GET', `/api/git/changes?${query({ path: repoPath, ref })}`, SHAPE.changes);
  }

  async gitDiff(filePath: string, ref?: string): Promise<{ modified: string | null; original: string | null }> {
    return this.request('GET', `/api/git/diff?${query({ path: filePath, ref })}`, SHAPE.diff);
  }

  /** Sends a message to a conversation (and runs the agent when `run`). */
  async sendMessage(id: string, message: AgentMessage): Promise<void> {
    this.accepted(await this.request('POST', `/api/conversations/${id}/events`, SHAPE.success, message), 'the message');
  }

  /** Pauses the conversation's agent after its current step (the sandbox and its data stay). */
  async pauseConversation(id: string): Promise<void> {
    this.accepted(await this.request('POST', `/api/conversations/${id}/pause`, SHAPE.success), 'the pause');
  }

  /** Runs a paused or idle conversation's agent again, in the background; false when it already runs (409). */
  async runConversation(id: string): Promise<boolean> {
    try {
      this.accepted(await this.request('POST', `/api/conversations/${id}/run`, SHAPE.success), 'the run');
      return true;
    } catch (error) {
      if (error instanceof AgentServerError && error.upstreamStatus === 409) return false;
      throw error;
    }
  }

  /** Saves the loaded conversations, pauses their runs and releases their leases before the sandbox stops (1.58: 204). */
  async prepareForSandboxPause(): Promise<void> {
    await this.request('POST', '/api/conversations/prepare-for-sandbox-pause', null);
  }

  /** Accepts or rejects the action the agent waits on in confirmation mode (the agent server's words when there is none). */
  async respondToConfirmation(id: string, answer: { accept: boolean; reason?: string }): Promise<void> {
    this.accepted(
      await this.request('POST', `/api/conversations/${id}/events/respond_to_confirmation`, SHAPE.success, answer),
      'the answer',
    );
  }

  /** Replaces the conversation's LLM (an LLM the caller resolved; its key in clear). */
  async switchLlm(id: string, llm: Record<string, unknown>): Promise<void> {
    this.accepted(await this.request('POST', `/api/conversations/${id}/switch_llm`, SHAPE.success, { llm }), 'the LLM switch');
  }

  /** Switches an ACP conversation's model (the agent server refuses it for other agents with 400). */
  async switchAcpModel(id: string, model: string): Promise<void> {
    this.accepted(await this.request('POST', `/api/conversations/${id}/switch_acp_model`, SHAPE.success, { model }), 'the model switch');
  }

  /** The project's hook configuration (.openhands/hooks.json), or null. */
  async hooks(projectDir: string): Promise<Record<string, unknown> | null> {
    return (await this.request('POST', '/api/hooks', SHAPE.hooks, { project_dir: projectDir })).hook_config;
  }

  /** A file's bytes; null when it is larger than maxBytes (nothing more is read). */
  async readFile(path: string, maxBytes: number): Promise<Buffer | null> {
    const response = await this.send('GET', `/api/file/download?${query({ path })}`);
    return this.body(response, maxBytes, 'GET /api/file/download');
  }

  private accepted(answer: { success: boolean }, what: string): void {
    if (!answer.success) throw new AgentServerError(200, `Agent server did not accept ${what}`);
  }

  /** Skills the agent server finds for a project directory (the repository's and the public ones). */
  async skills(projectDir: string): Promise<Record<string, unknown>[]> {
    const body = { load_public: false, load_user: false, load_project: true, load_org: false, project_dir: projectDir };
    return (await this.request('POST', '/api/skills', SHAPE.skills, body)).skills;
  }

  /** One call; `shape`: what a 2xx body must be (JSON), or null when only the status matters (the body is not read). */
  private async request<T>(method: string, path: string, shape: z.ZodType<T>, body?: unknown): Promise<T>;
  private async request(method: string, path: string, shape: null, body?: unknown): Promise<void>;
  private async request<T>(method: string, path: string, shape: z.ZodType<T> | null, body?: unknown): Promise<T | void> {
    if (shape !== null) return (await this.sized(method, path, shape, body)).value;
    await discard(await this.send(method, path, body));
  }

  /** One call whose 2xx body must be JSON of `shape` (at most MAX_AGENT_JSON_BYTES), with its size. */
  private async sized<T>(method: string, path: string, shape: z.ZodType<T>, body?: unknown): Promise<{ value: T; bytes: number }> {
    const response = await this.send(method, path, body);
    const what = `${method} ${path.split('?')[0]}`;
    const bytes = await this.body(response, MAX_AGENT_JSON_BYTES, what);
    if (bytes === null)
      throw new AgentServerError(response.status, `Agent server answered ${what} with more than ${inMegabytes(MAX_AGENT_JSON_BYTES)}`);
    const text = bytes.toString('utf8');
    const type = response.headers.get('content-type') ?? '';
    if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
      throw new AgentServerError(response.status, `Agent server answered ${what} with a content type that is not JSON`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // The parser's message would quote the body.
      throw new AgentServerError(response.status, `Agent server answered ${what} with a body that is not JSON`);
    }
    const checked = shape.safeParse(parsed);
    // The issues would quote the body: the message names only the call.
    if (!checked.success) throw new AgentServerError(response.status, `Agent server answered ${what} with an unexpected body`);
    return { value: checked.data, bytes: bytes.length };
  }

  /** A 2xx answer's body up to maxBytes (null past it); one that does not arrive whole is the agent server's failure. */
  private async body(response: Response, maxBytes: number, what: string): Promise<Buffer | null> {
    try {
      return await readBounded(response, maxBytes);
    } catch (error) {
      if (!(error instanceof BodyNotRead)) throw error;
      // A connection broken midway is unreachable, as one never opened (503); an answer begun and never finished is a 502.
      if (!error.timedOut) throw new AgentServerError(null, `Agent server unreachable (${what}): ${error.message}`);
      const within = `within ${this.requestTimeoutMs / 1000} s`;
      throw new AgentServerError(response.status, `Agent server did not finish its answer to ${what} ${within}`);
    }
  }

  /** Sends a call and answers its 2xx response (body unread); any other answer is an AgentServerError. */
  private async send(method: string, path: string, body?: unknown): Promise<Response> {
    const isForm = body instanceof FormData;
    const what = `${method} ${path.split('?')[0]}`;
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        method,
        headers: { 'x-session-api-key': this.sessionKey, ...(body !== undefined && !isForm ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : isForm ? body : JSON.stringify(body),
        // A redirect could carry the session key elsewhere: it is an unexpected answer.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (error) {
      const why =
        (error as Error).name === 'TimeoutError' ? `no answer within ${this.requestTimeoutMs / 1000} s` : (error as Error).message;
      throw new AgentServerError(null, `Agent server unreachable (${what}): ${why}`);
    }
    if (response.ok) return response;
    // Only the sanitised summary of the agent server's text goes on: it can echo what we sent.
    // An error body past its bound, or unfinished, has no summary: the status says enough.
    const text = (await readBounded(response, MAX_AGENT_ERROR_BYTES).catch(() => null))?.toString('utf8') ?? '';
    const detail = errorSummary(text, [this.sessionKey, ...(isForm ? [] : stringsOf(body))]);
    throw new AgentServerError(
      response.status,
      `Agent server answered ${response.status} to ${what}${detail}`,
      detail ? detail.slice(2) : null,
    );
  }
}

/** A query string of the given values (unset ones left out). */
function query(values: Record<string, string | undefined>): string {
  return new URLSearchParams(Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined)).toString();
}
