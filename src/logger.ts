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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'agent-control-plane' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
