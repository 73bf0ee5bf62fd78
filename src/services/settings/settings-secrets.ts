// Which settings hold credentials, and the one walk over them. Sealing (save), opening
// (resolve), masking (responses) and key rotation all map the same slots with this walk.
//
// The AES-GCM associated data binds each ciphertext to its user and field; the contexts
// below must never change, or stored settings stop decrypting.

/** Settings fields that hold a credential: ciphertext at rest, null in every response. */
export const SECRET_SETTINGS_FIELDS = ['llm_api_key', 'search_api_key', 'sandbox_api_key'] as const;
export type SecretSettingsField = (typeof SECRET_SETTINGS_FIELDS)[number];

export const isSecretSettingsField = (field: string): field is SecretSettingsField =>
  (SECRET_SETTINGS_FIELDS as readonly string[]).includes(field);

export const settingsSecretContext = (userId: string, field: SecretSettingsField) => `settings:${userId}:${field}`;
export const mcpSecretContext = (userId: string) => `settings:${userId}:mcp_config`;

/**
 * Where a secret sits: a settings field, a remote MCP server's api_key or header value (the
 * server known by its name when it has one, else by its URL), or a stdio server's env value.
 */
export type SecretSlot = { context: string } & (
  | { kind: 'field'; field: SecretSettingsField }
  | { kind: 'api_key'; servers: RemoteList; url: string; name?: string }
  | { kind: 'header'; servers: RemoteList; url: string; name?: string; key: string }
  | { kind: 'env'; server: string; key: string }
);
type RemoteList = 'sse_servers' | 'shttp_servers';
export type McpSecretSlot = Exclude<SecretSlot, { kind: 'field' }>;

type Secret = string | null | undefined;

/** What a 2026 save keeps beside a V0 entry (contract/mcp-servers.schema.ts); absent on a V0 save. */
interface Extras {
  extras?: Readonly<Record<string, unknown>> | null;
}
interface RemoteLike extends Extras {
  url: string;
  api_key?: Secret;
  name?: string | null;
  headers?: Readonly<Record<string, string>> | null;
}

/** MCP config as stored or as sent: the walk reads only these keys. */
export interface McpLike {
  sse_servers?: readonly RemoteLike[] | null;
  shttp_servers?: readonly (RemoteLike & { timeout?: number | null })[] | null;
  stdio_servers?:
    | readonly (Extras & {
        name: string;
        command: string;
        args?: readonly string[] | null;
        env?: Readonly<Record<string, string>> | null;
      })[]
    | null;
}

export type SettingsSecretsHolder = Partial<Record<SecretSettingsField, Secret>> & { mcp_config?: McpLike | null };

/** MCP config with each secret mapped to T; the other keys normalised (args [], timeout null). */
export interface McpWith<T> {
  sse_servers: RemoteWith<T>[];
  shttp_servers: (RemoteWith<T> & { timeout: number | null })[];
  stdio_servers: { name: string; command: string; args: string[]; env: Record<string, T>; extras?: Record<string, unknown> }[];
}
/** name, headers and extras are present only on a server saved in the 2026 shape. */
export interface RemoteWith<T> {
  url: string;
  api_key: T;
  name?: string;
  headers?: Record<string, T>;
  extras?: Record<string, unknown>;
}

/**
 * The one walk: fn sees every secret slot (absent values too, as null or undefined) and
 * returns what goes there. mcp_config stays null or undefined when it is.
 */
export function mapSettingsSecrets<T>(
  userId: string,
  doc: SettingsSecretsHolder,
  fn: (value: Secret, at: SecretSlot) => T,
): { fields: Record<SecretSettingsField, T>; mcp_config: McpWith<T> | null | undefined } {
  const fields = Object.fromEntries(
    SECRET_SETTINGS_FIELDS.map((field) => [field, fn(doc[field], { kind: 'field', field, context: settingsSecretContext(userId, field) })]),
  ) as Record<SecretSettingsField, T>;
  const mcp = doc.mcp_config;
  return { fields, mcp_config: mcp ? mapMcpSecrets(userId, mcp, fn) : mcp };
}

function mapMcpSecrets<T>(userId: string, mcp: McpLike, fn: (value: Secret, at: McpSecretSlot) => T): McpWith<T> {
  const context = mcpSecretContext(userId);
  const remote = (servers: RemoteList, s: RemoteLike): RemoteWith<T> => {
    const name = s.name ?? undefined;
    const headers = s.headers ? entriesOf(s.headers) : null;
    return {
      url: s.url,
      api_key: fn(s.api_key, { kind: 'api_key', servers, url: s.url, name, context }),
      ...(name !== undefined ? { name } : {}),
      ...(headers
        ? {
            headers: Object.fromEntries(
              headers.map(([key, value]) => [key, fn(value, { kind: 'header', servers, url: s.url, name, key, context })]),
            ),
          }
        : {}),
      ...(s.extras ? { extras: { ...s.extras } } : {}),
    };
  };
  return {
    sse_servers: (mcp.sse_servers ?? []).map((s) => remote('sse_servers', s)),
    shttp_servers: (mcp.shttp_servers ?? []).map((s) => ({ ...remote('shttp_servers', s), timeout: s.timeout ?? null })),
    stdio_servers: (mcp.stdio_servers ?? []).map((s) => ({
      name: s.name,
      command: s.command,
      args: [...(s.args ?? [])],
      env: Object.fromEntries(
        entriesOf(s.env ?? {}).map(([key, value]) => [key, fn(value, { kind: 'env', server: s.name, key, context })]),
      ),
      ...(s.extras ? { extras: { ...s.extras } } : {}),
    })),
  };
}

/** A stored map reads back as a Map from mongoose documents and as an object from lean reads. */
function entriesOf(map: Readonly<Record<string, string>> | ReadonlyMap<string, string>): [string, string][] {
  return map instanceof Map ? [...map.entries()] : Object.entries(map);
}

/** The value at the same MCP slot of another config (a masked value sent back keeps it). */
export function mcpSecretAt(mcp: McpLike | null | undefined, at: McpSecretSlot): Secret {
  if (at.kind === 'env') return mcp?.stdio_servers?.find((s) => s.name === at.server)?.env?.[at.key];
  const servers = mcp?.[at.servers];
  const server = (at.name !== undefined ? servers?.find((s) => s.name === at.name) : undefined) ?? servers?.find((s) => s.url === at.url);
  if (at.kind === 'api_key') return server?.api_key;
  return server?.headers ? Object.fromEntries(entriesOf(server.headers))[at.key] : undefined;
}
