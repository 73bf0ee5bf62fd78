// MCP server configuration (docs/api.md): unknown keys are rejected at every level, as the
// reference does with extra='forbid'.
import { z } from 'zod';
import { jsonInt, withoutReservedKeys } from './common.schema.js';

const URL_SCHEMES = new Set(['http:', 'https:', 'ws:', 'wss:']);

export const McpUrlSchema = z
  .string()
  .trim()
  .refine((value) => {
    try {
      const url = new URL(value);
      return URL_SCHEMES.has(url.protocol) && url.hostname !== '';
    } catch {
      return false;
    }
  }, 'URL must use http, https, ws or wss and include a host');

const ServerNameSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9_-]+$/, 'Server name can only contain letters, numbers, hyphens, and underscores');

export const EnvKeySchema = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]*$/,
    'Environment variable names must start with a letter or underscore and contain only letters, digits and underscores',
  );

/** A bare string is shorthand for {"url": string}, as in the reference. */
const urlShorthand = (value: unknown) => (typeof value === 'string' ? { url: value } : value);

export const McpSseServerInputSchema = z.preprocess(
  urlShorthand,
  z.strictObject({ url: McpUrlSchema, api_key: z.string().nullable().optional() }),
);

export const McpShttpServerInputSchema = z.preprocess(
  urlShorthand,
  z.strictObject({
    url: McpUrlSchema,
    api_key: z.string().nullable().optional(),
    timeout: jsonInt().pipe(z.number().min(1).max(3600)).nullable().default(60),
  }),
);

export const McpStdioServerInputSchema = z.strictObject({
  name: ServerNameSchema,
  command: z.string().trim().min(1).regex(/^\S+$/, 'Command must be a single executable without spaces; put arguments in args'),
  // A string is shell-split, as the reference accepts.
  args: z
    .preprocess((v, ctx) => {
      if (typeof v !== 'string') return v;
      const words = shellSplit(v);
      if (words === null) ctx.addIssue({ code: 'custom', message: 'Unterminated quote in args', input: v });
      return words ?? [];
    }, z.array(z.string()))
    .default([]),
  // A string "K=V,K2=V2" is parsed into an object, as the reference accepts.
  env: z
    .preprocess((v) => (typeof v === 'string' ? parseEnvString(v) : v), withoutReservedKeys(z.record(EnvKeySchema, z.string())))
    .default({}),
});

export const McpConfigInputSchema = z
  .strictObject({
    sse_servers: z.array(McpSseServerInputSchema).default([]),
    stdio_servers: z.array(McpStdioServerInputSchema).default([]),
    shttp_servers: z.array(McpShttpServerInputSchema).default([]),
  })
  .meta({ id: 'MCPConfigInput' });

/** What a 2026 save adds to a V0 entry (contract/mcp-servers.schema.ts): its name, headers and the other fields as sent. */
export interface McpEntryExtras {
  name?: string;
  headers?: Record<string, string>;
  extras?: Record<string, unknown>;
}
type V0Input = z.output<typeof McpConfigInputSchema>;
/** A configuration to store: the V0 lists, each entry possibly with its 2026 extras. */
export interface McpConfigInput {
  sse_servers: (V0Input['sse_servers'][number] & McpEntryExtras)[];
  stdio_servers: (V0Input['stdio_servers'][number] & Omit<McpEntryExtras, 'name' | 'headers'>)[];
  shttp_servers: (V0Input['shttp_servers'][number] & McpEntryExtras)[];
}

// Output: credentials (api_key, env values) are masked (src/services/settings/settings-secrets.ts).
export const McpConfigSchema = z
  .object({
    sse_servers: z.array(z.object({ url: z.string(), api_key: z.string().nullable() })),
    stdio_servers: z.array(
      z.object({ name: z.string(), command: z.string(), args: z.array(z.string()), env: z.record(z.string(), z.string()) }),
    ),
    shttp_servers: z.array(z.object({ url: z.string(), api_key: z.string().nullable(), timeout: z.number().nullable() })),
  })
  .meta({ id: 'MCPConfig' });
export type McpConfig = z.infer<typeof McpConfigSchema>;

/** POSIX-shell-like word splitting with quotes and backslash escapes; null on an open quote. */
export function shellSplit(input: string): string[] | null {
  const words: string[] = [];
  let current = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]!;
    if (quote === "'") {
      if (ch === "'") quote = null;
      else current += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '\\' && i + 1 < input.length && '"\\$`'.includes(input[i + 1]!)) current += input[++i];
      else current += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < input.length) {
      current += input[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(current);
      current = '';
      inWord = false;
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (quote) return null;
  if (inWord) words.push(current);
  return words;
}

/** Parses "K=V,K2=V2"; a malformed pair is kept under its raw key so validation reports it. */
export function parseEnvString(input: string): Record<string, string> {
  // No prototype: a "__proto__=…" pair becomes a key that validation can see and refuse.
  const env: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const pair of input.split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    if (eq < 0) env[pair.trim()] = '';
    else env[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return env;
}
