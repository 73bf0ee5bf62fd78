// A small client for the agent server inside a sandbox (API.md B.12; observed shapes in
// docs/agent-server-notes.md). Every call carries the sandbox's session key.
import { AppError } from '../errors.js';

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

const POLL_MS = 250;

export class AgentServerClient {
  constructor(
    readonly baseUrl: string,
    private readonly sessionKey: string,
    private readonly requestTimeoutMs = 30_000,
  ) {}

  /** Runs a shell command (sh) and waits for it; output arrives when the command ends. */
  async bash(command: string, opts: { cwd?: string; timeoutSeconds?: number } = {}): Promise<BashResult> {
    const timeout = opts.timeoutSeconds ?? 120;
    const started = await this.request<{ id: string }>('POST', '/api/bash/start_bash_command', {
      command,
      timeout,
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
    });
    const deadline = Date.now() + (timeout + 30) * 1000;
    for (;;) {
      const page = await this.request<{
        items: { order: number; exit_code: number | null; stdout: string | null; stderr: string | null }[];
      }>('GET', `/api/bash/bash_events/search?command_id__eq=${started.id}&limit=100`);
      const done = page.items.find((i) => i.exit_code !== null);
      if (done) {
        const items = [...page.items].sort((a, b) => a.order - b.order);
        return {
          exitCode: done.exit_code!,
          stdout: items.map((i) => i.stdout ?? '').join(''),
          stderr: items.map((i) => i.stderr ?? '').join(''),
        };
      }
      if (Date.now() > deadline) throw new Error(`command did not finish within ${timeout} s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Writes a file (multipart upload): file content never appears in a command line. */
  async uploadFile(path: string, content: string): Promise<void> {
    const form = new FormData();
    form.append('file', new Blob([content]), 'file');
    await this.request('POST', `/api/file/upload?path=${encodeURIComponent(path)}`, form);
  }

  async startConversation(body: unknown): Promise<AgentConversationInfo> {
    return this.request('POST', '/api/conversations', body);
  }

  async getConversations(ids: string[]): Promise<(AgentConversationInfo | null)[]> {
    const query = ids.map((id) => `ids=${encodeURIComponent(id)}`).join('&');
    return this.request('GET', `/api/conversations?${query}`);
  }

  async deleteConversation(id: string): Promise<void> {
    await this.request('DELETE', `/api/conversations/${id}`);
  }

  async setTitle(id: string, title: string): Promise<void> {
    await this.request('PATCH', `/api/conversations/${id}`, { title });
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const isForm = body instanceof FormData;
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        method,
        headers: { 'x-session-api-key': this.sessionKey, ...(body !== undefined && !isForm ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : isForm ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(this.requestTimeoutMs),
      });
    } catch (error) {
      throw new AppError('BAD_GATEWAY', `Agent server unreachable (${method} ${path.split('?')[0]}): ${(error as Error).message}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new AppError(
        'BAD_GATEWAY',
        `Agent server answered ${response.status} to ${method} ${path.split('?')[0]}: ${text.slice(0, 300)}`,
      );
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

/**
 * The agent server's error without what we sent: FastAPI validation errors echo the
 * offending `input`, which for a conversation start can hold the LLM key and secrets.
 */
export function errorSummary(body: string): string {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown; exception?: unknown };
    if (Array.isArray(parsed.detail)) {
      const issues = parsed.detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg ?? 'invalid'}`);
      return `: ${issues.join('; ').slice(0, 300)}`;
    }
    const message = typeof parsed.exception === 'string' ? parsed.exception : typeof parsed.detail === 'string' ? parsed.detail : null;
    return message ? `: ${message.slice(0, 300)}` : '';
  } catch {
    return '';
  }
}
