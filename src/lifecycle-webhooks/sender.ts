// One delivery attempt over HTTP: a POST on node's own client, whose address lookup checks
// every resolved address against WEBHOOK_HOSTS (the git providers' SSRF guard,
// git/providers/provider-hosts.ts), with no redirects followed and one time bound for the whole
// exchange. Any 2xx is success; everything else is a failed attempt, described without the
// receiver's words (its body is read and dropped).
import http from 'node:http';
import https from 'node:https';
import type { ProviderHostPolicy } from '../git/providers/provider-hosts.js';
import { connectionFailure, readCapped, send } from '../git/providers/http-send.js';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

const MAX_ANSWER_BYTES = 64 * 1024;

type Agents = { 'http:': http.Agent; 'https:': https.Agent };

export class WebhookSender {
  private readonly checked: Agents;
  private readonly listed: Agents;

  constructor(
    private readonly hosts: ProviderHostPolicy,
    private readonly timeoutMs: number,
  ) {
    // No keep-alive: a receiver that closes idle sockets would turn the next attempt into a reset.
    this.checked = { 'http:': new http.Agent({ lookup: hosts.lookup }), 'https:': new https.Agent({ lookup: hosts.lookup }) };
    this.listed = { 'http:': new http.Agent(), 'https:': new https.Agent() };
  }

  async post(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const target = new URL(url);
    const decision = this.hosts.decide(url, target.origin);
    if (!decision) return { ok: false, statusCode: null, error: 'The URL is not allowed here (WEBHOOK_HOSTS)', durationMs: 0 };
    const agents = decision.reach === 'any' ? this.listed : this.checked;
    const agent = agents[target.protocol as 'http:' | 'https:'];
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const answer = await send(target, { method: 'POST', headers, body, agent, signal });
      await readCapped(answer.body, MAX_ANSWER_BYTES, () => new Error('answer too large')).catch(() => '');
      const ok = answer.status >= 200 && answer.status < 300;
      return { ok, statusCode: answer.status, error: ok ? null : `The receiver answered HTTP ${answer.status}`, durationMs: elapsed() };
    } catch (error) {
      return { ok: false, statusCode: null, error: this.describe(error, signal), durationMs: elapsed() };
    }
  }

  private describe(error: unknown, signal: AbortSignal): string {
    return signal.aborted ? `No answer within ${this.timeoutMs} ms` : connectionFailure(error, 'WEBHOOK_HOSTS');
  }
}
