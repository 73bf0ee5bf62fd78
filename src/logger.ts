// Structured JSON logs (pino). Secrets must never reach a log line: the redact list covers
// the auth headers and every secret-bearing field name, at any depth we log.
import { pino, type Logger } from 'pino';

export type { Logger };

const SECRET_FIELDS = [
  'llm_api_key',
  'search_api_key',
  'sandbox_api_key',
  'api_key',
  'token',
  'value',
  'secret',
  'provider_tokens',
  'session_api_key',
  'encryptionKey',
];

export const REDACT_PATHS = [
  'req.headers["x-session-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-session-api-key"]',
  'headers.authorization',
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]),
];

/** pino's isoTime, formatted once per millisecond: a busy service writes many lines in one. */
let stampedAt = -1;
let stamp = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return stamp;
}

const BASE = { base: { service: 'agent-control-plane' }, timestamp: isoTime };

/** One access-log line per request; its fields are fixed and never carry a secret. */
export interface AccessLine {
  reqId: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
}

const accessLogs = new WeakMap<Logger, (line: AccessLine) => void>();

/**
 * Without a destination: stdout, written asynchronously in batches of 4 KiB or every 250 ms,
 * whichever comes first, so a busy service makes one write for dozens of lines; pino writes
 * what is left when the process exits, and flush() does at once.
 */
export function createLogger(
  level: string,
  destination: pino.DestinationStream = pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }),
): Logger {
  const log = pino({ ...BASE, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
  // Redaction walks ~30 paths with wildcards on every line (~20 µs); the access line, written
  // for every request, has only the fields above, so it goes through a twin without it.
  const access = pino({ ...BASE, level }, destination);
  accessLogs.set(log, (line) => access.info(line, 'request'));
  return log;
}

/** The access-log writer of a logger made by createLogger (else the logger itself, redacting). */
export function accessLogOf(log: Logger): (line: AccessLine) => void {
  return accessLogs.get(log) ?? ((line) => log.info(line, 'request'));
}
