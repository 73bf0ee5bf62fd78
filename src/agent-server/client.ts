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
    const what = `${method} ${path.split('?')[0]}`;
    // Only the sanitised summary of the agent server's text goes on: it can echo what we sent.
    if (!response.ok) {
      const sent = [this.sessionKey, ...(isForm ? [] : stringsOf(body))];
      throw new AppError('BAD_GATEWAY', `Agent server answered ${response.status} to ${what}${errorSummary(text, sent)}`);
    }
    try {
      return (text ? JSON.parse(text) : undefined) as T;
    } catch {
      throw new AppError('BAD_GATEWAY', `Agent server answered ${what} with a body that is not JSON`); // the parser's message quotes the body
    }
  }
}

/** Every string in a request body (the values a failing agent server may echo back). */
function stringsOf(value: unknown, found: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') found.push(value);
  else if (value && typeof value === 'object' && depth < 32) for (const child of Object.values(value)) stringsOf(child, found, depth + 1);
  return found;
}

/** Strings this short are words and numbers, not secrets; redacting them would garble the summary. */
const MIN_REDACTED_LENGTH = 6;
/** Long unbroken runs of key-like characters: credentials whatever they belong to. */
const KEY_LIKE = /[A-Za-z0-9_\-+/=.]{24,}/g;

/**
 * The agent server's error without what we sent: FastAPI validation errors echo the
 * offending `input`, and any message may quote the LLM key or secrets of the request. Keeps
 * the locations and messages (at most 300 characters), with every sent string of some length
 * and every key-like run of characters replaced by [redacted]; nothing of a non-JSON body.
 */
export function errorSummary(body: string, sent: readonly string[] = []): string {
  let summary: string;
  try {
    const parsed = JSON.parse(body) as { detail?: unknown; exception?: unknown };
    if (Array.isArray(parsed.detail)) {
      summary = parsed.detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg ?? 'invalid'}`).join('; ');
    } else {
      const message = typeof parsed.exception === 'string' ? parsed.exception : typeof parsed.detail === 'string' ? parsed.detail : null;
      if (!message) return '';
      summary = message;
    }
  } catch {
    return '';
  }
  for (const secret of [...sent].filter((s) => s.length >= MIN_REDACTED_LENGTH).sort((a, b) => b.length - a.length)) {
    summary = summary.split(secret).join('[redacted]');
  }
  return `: ${summary.replace(KEY_LIKE, '[redacted]').slice(0, 300)}`;
}
