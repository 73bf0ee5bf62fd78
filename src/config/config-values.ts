// Parsers of single environment values (sizes, lists, origins, key=value pairs, keys), for
// the configuration schema in config.ts. Each reports a bad value as a zod issue, so one
// message lists every bad variable. Also the tools' cache root (as scripts/ compute it), for the service and the tests.
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/** Where built tools live: AGENT_CP_CACHE_DIR, else $XDG_CACHE_HOME (or ~/.cache)/agent-control-plane, as scripts/ compute it. */
export function cacheRoot(override: string | undefined = process.env.AGENT_CP_CACHE_DIR): string {
  return path.resolve(
    override?.trim() || path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'agent-control-plane'),
  );
}

export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** A per-window request limit, or "off". */
export const rateLimit = (fallback: number) =>
  z
    .union([z.literal('off'), z.coerce.number().int().min(1).max(1_000_000)])
    .default(fallback)
    .transform((v) => (v === 'off' ? null : v));

export const optionalHttpUrl = optionalString.pipe(z.url({ protocol: /^https?$/ }).optional());

/** A GIT_PROVIDER_HOSTS entry (git/providers/provider-hosts.ts): "*", a host with an optional port, or a CIDR network. */
export const HOST_RULE = /^(\*|(\[[0-9a-f:.]+\]|[^\s:/[\]]+)(:\d{1,5})?|[0-9a-f:.]+\/\d{1,3})$/i;
/** A comma-separated list of those entries. */
export const hostRules = optionalString.refine(
  (v) => splitList(v).every((h) => HOST_RULE.test(h)),
  '*, host[:port] or network/prefix, comma-separated',
);
/** A byte size such as 1mb, 512kb or 100000. */
export const byteSize = (fallback: string) =>
  z
    .string()
    .regex(/^\d+(b|kb|mb)?$/i, `a size such as ${fallback}, 512kb or 100000`)
    .default(fallback);
/** A string of a given form, with its default. */
export const shaped = (form: RegExp, fallback: string, message?: string) => z.string().regex(form, message).default(fallback);
export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** "k=v,k2=v2" → {k: v, k2: v2}. */
export const keyValues = optionalString.transform((value, ctx) => {
  const pairs: Record<string, string> = {};
  for (const item of splitList(value)) {
    const eq = item.indexOf('=');
    if (eq <= 0) {
      ctx.addIssue({ code: 'custom', message: `expected key=value pairs separated by commas, got "${item}"` });
      return z.NEVER;
    }
    pairs[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return pairs;
});

/** A JSON list of Kubernetes tolerations. */
export const tolerations = optionalString.transform((value, ctx) => {
  if (!value) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed)) {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON list of tolerations' });
    return z.NEVER;
  }
  return parsed as { key?: string; operator?: string; value?: string; effect?: string }[];
});

/** Origins (scheme://host[:port]) as browsers send them in the Origin header. */
export const origins = optionalString.transform((value, ctx) => {
  const list: string[] = [];
  for (const item of splitList(value)) {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || trimSlash(item) !== url.origin) {
      ctx.addIssue({ code: 'custom', message: `entries are origins such as https://app.example.com, got "${item}"` });
      return z.NEVER;
    }
    list.push(url.origin);
  }
  return list;
});

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "5s,5m,30m,2h" → milliseconds each (units ms, s, m, h; a bare number is milliseconds); at least one, none over a day. */
export const durations = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, ctx) => {
      const list = splitList(value).map((item) => {
        const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(item);
        return match ? Math.round(Number(match[1]) * DURATION_UNITS[match[2] ?? 'ms']!) : NaN;
      });
      if (list.length === 0 || list.some((ms) => !Number.isFinite(ms) || ms > 86_400_000)) {
        ctx.addIssue({ code: 'custom', message: `expected durations such as 5s,5m,30m,2h (each at most 24h), got "${value}"` });
        return z.NEVER;
      }
      return list;
    });

export const KEY_FORMAT = 'must be 32 bytes, base64 or hex encoded';
export const isKey = (text: string) => {
  try {
    parseKey(text);
    return true;
  } catch {
    return false;
  }
};

export function splitList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** express's "trust proxy": unset = trust none; true/false; a hop count; or addresses/subnets ("loopback, 10.0.0.0/8"). */
export function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** "25mb", "512kb", "1000" → bytes (the formats of MAX_BODY_SIZE and MAX_UPLOAD_SIZE). */
export function parseSize(size: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(size);
  const n = Number(match?.[1] ?? 1_000_000);
  const unit = (match?.[2] ?? 'b').toLowerCase();
  return n * (unit === 'mb' ? 1024 * 1024 : unit === 'kb' ? 1024 : 1);
}

/** An encryption key: 32 bytes as base64 (44 chars) or hex (64 chars). */
export function parseKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error('ENCRYPTION_KEY must be 32 bytes, base64 or hex encoded');
  return key;
}
