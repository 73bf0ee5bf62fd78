// The usage an answer reports, read as it passes (docs/llm-gateway.md, Pricing): a JSON answer
// whole, a stream event by event without holding it (each SSE "data:" line is parsed on its
// own; only the usage objects are kept). Tokens are normalised as CallUsage: input without
// the cache reads and writes, which are priced apart.
//   chat       usage.prompt_tokens (cached ones in prompt_tokens_details.cached_tokens),
//              completion_tokens; streamed: the last chunk's usage (stream_options.include_usage)
//   responses  usage.input_tokens (input_tokens_details.cached_tokens), output_tokens;
//              streamed: response.completed's response.usage
//   messages   usage.input_tokens, cache_read_input_tokens, cache_creation_input_tokens,
//              output_tokens; streamed: message_start's usage, then message_delta's cumulative output
import type { ApiStyle } from './upstream.js';
import type { CallUsage } from './usage.js';

const num = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);
const obj = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** The usage of a whole (non-streamed) answer; null when it reports none. */
export function usageOfAnswer(style: ApiStyle, answer: unknown): CallUsage | null {
  const usage = obj(obj(answer).usage);
  if (Object.keys(usage).length === 0) return null;
  return style === 'messages' ? anthropicUsage(usage) : openAiUsage(usage);
}

function openAiUsage(usage: Record<string, unknown>): CallUsage {
  // Chat names them prompt/completion, Responses input/output.
  const prompt = num(usage.prompt_tokens ?? usage.input_tokens);
  const details = obj(usage.prompt_tokens_details ?? usage.input_tokens_details);
  const cached = Math.min(prompt, num(details.cached_tokens));
  // Proxies that report cache writes count them inside the prompt too: priced apart, not twice.
  const written = Math.min(prompt - cached, num(details.cache_creation_tokens));
  const outputDetails = obj(usage.completion_tokens_details ?? usage.output_tokens_details);
  return {
    input: prompt - cached - written,
    cacheRead: cached,
    cacheWrite: written,
    output: num(usage.completion_tokens ?? usage.output_tokens),
    reasoning: num(outputDetails.reasoning_tokens),
  };
}

function anthropicUsage(usage: Record<string, unknown>): CallUsage {
  const cacheWrite = num(usage.cache_creation_input_tokens);
  return {
    input: num(usage.input_tokens),
    cacheRead: num(usage.cache_read_input_tokens),
    cacheWrite,
    // Of the writes, those cached for an hour (priced higher where the entry says so).
    cacheWrite1h: Math.min(cacheWrite, num(obj(usage.cache_creation).ephemeral_1h_input_tokens)),
    output: num(usage.output_tokens),
    reasoning: 0,
  };
}

/** Reads a stream's usage as its bytes pass; `usage()` at the end. Lines are bounded: a longer one is skipped, not kept. */
export class StreamUsageTap {
  private pending = '';
  private found: CallUsage | null = null;

  constructor(
    private readonly style: ApiStyle,
    private readonly maxLine = 4 * 1024 * 1024,
  ) {}

  write(chunk: Buffer): void {
    this.pending += chunk.toString('utf8');
    let end: number;
    while ((end = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, end).trimEnd();
      this.pending = this.pending.slice(end + 1);
      if (line.startsWith('data:')) this.event(line.slice(5).trim());
    }
    if (this.pending.length > this.maxLine) this.pending = '';
  }

  usage(): CallUsage | null {
    if (this.pending.startsWith('data:')) this.event(this.pending.slice(5).trim());
    this.pending = '';
    return this.found;
  }

  private event(data: string): void {
    if (!data || data === '[DONE]' || !data.includes('usage')) return;
    let event: Record<string, unknown>;
    try {
      event = obj(JSON.parse(data));
    } catch {
      return;
    }
    if (this.style === 'messages') return this.anthropicEvent(event);
    const usage = this.style === 'responses' ? obj(obj(event.response).usage) : obj(event.usage);
    if (Object.keys(usage).length > 0) this.found = openAiUsage(usage);
  }

  /** message_start carries the input side; each message_delta the output so far (cumulative). */
  private anthropicEvent(event: Record<string, unknown>): void {
    const usage = event.type === 'message_start' ? obj(obj(event.message).usage) : event.type === 'message_delta' ? obj(event.usage) : {};
    if (Object.keys(usage).length === 0) return;
    const next = anthropicUsage(usage);
    const seen = this.found;
    this.found = seen
      ? {
          input: Math.max(seen.input, next.input),
          cacheRead: Math.max(seen.cacheRead, next.cacheRead),
          cacheWrite: Math.max(seen.cacheWrite, next.cacheWrite),
          cacheWrite1h: Math.max(seen.cacheWrite1h ?? 0, next.cacheWrite1h ?? 0),
          output: Math.max(seen.output, next.output),
          reasoning: 0,
        }
      : next;
  }
}
