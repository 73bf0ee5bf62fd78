// MCP servers in the 2026 shape (docs/api.md "MCP servers"): a map from a server's name to the
// server, as agent servers ≥ 1.50 and today's clients read it in agent_settings.mcp_config;
// `{"mcpServers": {...}}` is accepted too. Stored in the V0 lists with the 2026 extras beside
// (models/settings.model.ts), so V0 /api/settings and the 2026 routes show one configuration.
import { z } from 'zod';
import { jsonBool, noCoerce, withoutReservedKeys } from './common.schema.js';
import { type McpConfigInput, McpConfigInputSchema, McpUrlSchema, EnvKeySchema } from './mcp.schema.js';

/** The upstream settings key of a server (also the path segment of its test route). */
export const McpServerNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'Server names are 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');

const TRANSPORTS = ['stdio', 'http', 'streamable-http', 'shttp', 'sse'] as const;
const HeaderNameSchema = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'Not an HTTP header name');
const secretMap = withoutReservedKeys(z.record(HeaderNameSchema, z.string().max(8192)));

// OAuth needs the browser flow and a token store, basic auth a password this service would
// rebuild into a header: both refused (docs/api.md); a header or a bearer token does the same.
const UNSUPPORTED_AUTH = new Set(['basic', 'oauth2']);
const AuthSchema = z.preprocess(
  (value, ctx) => {
    const strategy = (value as { strategy?: unknown } | null)?.strategy;
    if (typeof strategy === 'string' && UNSUPPORTED_AUTH.has(strategy)) {
      ctx.addIssue({
        code: 'custom',
        message: `auth strategy '${strategy}' is not supported here; send the credential as a header (auth.strategy='header')`,
        path: ['strategy'],
        input: value,
      });
    }
    return value;
  },
  z.discriminatedUnion('strategy', [
    z.strictObject({ strategy: z.literal('none') }),
    z.strictObject({ strategy: z.literal('bearer'), value: z.string().max(8192).nullable().optional() }),
    z.strictObject({
      strategy: z.literal('api_key'),
      value: z.string().max(8192).nullable().optional(),
      header_name: HeaderNameSchema.nullable().optional(),
    }),
    z.strictObject({ strategy: z.literal('header'), headers: secretMap.default({}) }),
  ]),
);

const seconds = (max: number) => noCoerce(z.number().gt(0).max(max));

export const McpServerInputSchema = z
  .strictObject({
    url: McpUrlSchema.optional(),
    transport: z.enum(TRANSPORTS).nullable().optional(),
    // The agent server's test body names the transport "type".
    type: z.enum(TRANSPORTS).optional(),
    command: z.string().trim().min(1).max(4096).optional(),
    args: z.array(z.string().max(4096)).max(200).nullable().optional(),
    env: withoutReservedKeys(z.record(EnvKeySchema, z.string().max(65536)))
      .nullable()
      .optional(),
    cwd: z.string().max(4096).nullable().optional(),
    description: z.string().max(2000).nullable().optional(),
    icon: z.string().max(4096).nullable().optional(),
    timeout: seconds(3600).nullable().optional(),
    sse_read_timeout: seconds(86400).nullable().optional(),
    keep_alive: jsonBool().nullable().optional(),
    headers: secretMap.nullable().optional(),
    auth: AuthSchema.nullable().optional(),
    enabled: jsonBool().optional(),
  })
  .superRefine((server, ctx) => {
    const transport = transportOf(server);
    if (transport === 'stdio' && !server.command)
      ctx.addIssue({ code: 'custom', message: "stdio MCP servers require 'command'", path: ['command'] });
    if (transport !== 'stdio' && !server.url) ctx.addIssue({ code: 'custom', message: "remote MCP servers require 'url'", path: ['url'] });
    if (server.auth && Object.keys(server.headers ?? {}).some((name) => name.toLowerCase() === 'authorization')) {
      ctx.addIssue({
        code: 'custom',
        message: "'auth' cannot be combined with an explicit top-level 'Authorization' header; use auth.strategy='header' instead.",
        path: ['auth'],
      });
    }
  });
export type McpServerInput = z.output<typeof McpServerInputSchema>;

/** stdio, sse or http: the declared transport, else stdio for a command and http for a URL (sse when it ends in /sse). */
export function transportOf(server: Pick<McpServerInput, 'transport' | 'type' | 'command' | 'url'>): 'stdio' | 'sse' | 'http' {
  const declared = server.transport ?? server.type;
  if (declared === 'stdio' || declared === 'sse') return declared;
  if (declared) return 'http';
  if (server.command && !server.url) return 'stdio';
  return server.url && /\/sse\/?$/.test(new URL(server.url).pathname) ? 'sse' : 'http';
}

/** The fields kept as sent beside a V0 server (none is a credential). */
const EXTRA_KEYS = ['transport', 'cwd', 'description', 'icon', 'sse_read_timeout', 'keep_alive', 'enabled'] as const;

/**
 * A remote server's credentials as sent, in the two places the settings keep them: a bearer token
 * (auth bearer, or api_key without a header name: where V0 keeps its key) and headers (the sent
 * ones, with an api_key's header or the header strategy's folded in).
 */
export function remoteCredentials(server: Pick<McpServerInput, 'headers' | 'auth'>): {
  apiKey: string | null;
  headers: Record<string, string>;
} {
  const headers: Record<string, string> = { ...(server.headers ?? {}) };
  const auth = server.auth;
  if (auth?.strategy === 'bearer' || (auth?.strategy === 'api_key' && !auth.header_name)) return { apiKey: auth.value ?? null, headers };
  if (auth?.strategy === 'api_key' && auth.value != null) headers[auth.header_name!] = auth.value;
  else if (auth?.strategy === 'header') Object.assign(headers, auth.headers);
  return { apiKey: null, headers };
}

/** One 2026 server as a stored V0 entry with its extras. */
function toStored(name: string, server: McpServerInput) {
  const extras: Record<string, unknown> = {};
  for (const key of EXTRA_KEYS) if (server[key] != null) extras[key] = server[key];
  if (server.type && server.transport == null) extras.transport = server.type;
  const transport = transportOf(server);
  if (transport === 'stdio') {
    return { kind: 'stdio' as const, entry: { name, command: server.command!, args: server.args ?? [], env: server.env ?? {}, extras } };
  }
  const { apiKey, headers } = remoteCredentials(server);
  const entry = { url: server.url!, api_key: apiKey, name, headers, extras };
  return transport === 'sse'
    ? { kind: 'sse' as const, entry }
    : { kind: 'shttp' as const, entry: { ...entry, timeout: server.timeout ?? null } };
}

export const McpServerMapInputSchema = z
  .preprocess(
    (value) => (value && typeof value === 'object' && 'mcpServers' in value ? (value as { mcpServers: unknown }).mcpServers : value),
    z.preprocess(
      (value, ctx) => {
        // Each bad name reported by itself (a record's key schema says only "Invalid key in record").
        if (value && typeof value === 'object' && !Array.isArray(value)) {
          for (const name of Object.keys(value)) {
            const checked = McpServerNameSchema.safeParse(name);
            if (!checked.success) ctx.addIssue({ code: 'custom', message: checked.error.issues[0]!.message, path: [name], input: value });
          }
        }
        return value;
      },
      withoutReservedKeys(z.record(z.string(), McpServerInputSchema)),
    ),
  )
  .transform((servers): McpConfigInput => {
    const config: McpConfigInput = { sse_servers: [], stdio_servers: [], shttp_servers: [] };
    for (const [name, server] of Object.entries(servers)) {
      const stored = toStored(name, server);
      if (stored.kind === 'stdio') config.stdio_servers.push(stored.entry);
      else if (stored.kind === 'sse') config.sse_servers.push(stored.entry);
      else config.shttp_servers.push(stored.entry);
    }
    return config;
  });

const V0_KEYS = ['sse_servers', 'stdio_servers', 'shttp_servers'];
const isV0 = (value: unknown) => !!value && typeof value === 'object' && !Array.isArray(value) && V0_KEYS.some((key) => key in value);

/**
 * What the 2026 routes accept for mcp_config: the V0 lists as before when a V0 key is present,
 * else the 2026 map (or `{mcpServers}`). The gate sends a body to one form only, so its errors
 * are that form's.
 */
export const McpSettingsInputSchema = z
  .unknown()
  .transform((value, ctx): McpConfigInput => {
    const parsed = (isV0(value) ? McpConfigInputSchema : McpServerMapInputSchema).safeParse(value);
    if (parsed.success) return parsed.data;
    // Each issue as it is (its code and keys: the REST layer turns unknown keys into one loc each).
    for (const issue of parsed.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  })
  .meta({ id: 'MCPSettingsInput', description: 'The 2026 map of servers by name (or {"mcpServers": map}), or the V0 lists.' });

/** A server as shown: credentials (env, headers, auth value) are the mask. */
export const McpServerSchema = z
  .object({
    url: z.string().optional(),
    transport: z.string().optional(),
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: z.string().optional(),
    description: z.string().optional(),
    icon: z.string().optional(),
    timeout: z.number().optional(),
    sse_read_timeout: z.number().optional(),
    keep_alive: z.boolean().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    auth: z.object({ strategy: z.literal('bearer'), value: z.string() }).optional(),
    enabled: z.boolean(),
  })
  .meta({ id: 'MCPServer' });
export const McpServerMapSchema = z.record(z.string(), McpServerSchema).meta({ id: 'MCPServers' });
export type McpServerMap = z.infer<typeof McpServerMapSchema>;
export type McpServer = z.infer<typeof McpServerSchema>;

// Testing a server (POST /api/v1/mcp/test, the agent server's body; POST /api/v1/settings/mcp/{key}/test).

export const McpTestInputSchema = z
  .object({
    // Names the stored server whose masked credentials the test may use (upstream: only for messages).
    name: z
      .string()
      .max(128)
      .default('test-server')
      .transform((name) => name.trim() || 'test-server'),
    server: z.preprocess((value, ctx) => {
      if (value && typeof value === 'object' && 'authentication' in value) {
        ctx.addIssue({ code: 'custom', message: 'OAuth authentication metadata belongs under auth.authentication.', input: value });
      }
      return value;
    }, McpServerInputSchema),
    timeout: seconds(120).default(15),
    tool_call: z
      .object({ name: z.string().min(1).max(256), arguments: withoutReservedKeys(z.record(z.string(), z.unknown())).default({}) })
      .nullable()
      .optional(),
  })
  .meta({ id: 'MCPTestRequest' });
export type McpTestInput = z.output<typeof McpTestInputSchema>;

export const McpTestResultSchema = z
  .union([
    z.object({
      ok: z.literal(true),
      tools: z.array(z.string()),
      tool_result: z.object({ is_error: z.boolean(), text: z.string() }).optional(),
    }),
    z.object({ ok: z.literal(false), error: z.string(), error_kind: z.enum(['timeout', 'connection', 'unknown']) }),
  ])
  .meta({ id: 'MCPTestResponse' });

export const StoredMcpTestInputSchema = z.strictObject({
  settings_key: McpServerNameSchema,
  timeout: seconds(30).default(15),
});
export const StoredMcpTestResultSchema = z.object({ ok: z.boolean() }).meta({ id: 'StoredMCPProbeResponse' });
