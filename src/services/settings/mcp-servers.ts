// A stored MCP configuration (V0 lists, 2026 extras beside) as the 2026 map of servers by name:
// shown by the 2026 routes (credentials masked), sent to agent servers (credentials opened) and
// looked up by the test routes. One naming for all three: a server saved in the 2026 shape keeps
// its name; a V0 entry is sse_<i> / shttp_<i> (the names agent servers have always seen here)
// or its own name for stdio.
import type { McpServer } from '../../../contract/mcp-servers.schema.js';
import type { McpWith, RemoteWith } from './settings-secrets.js';

type Opened = McpWith<string | null>;
export type NamedServer =
  | { name: string; transport: 'sse' | 'http'; server: RemoteWith<string | null> & { timeout?: number | null } }
  | { name: string; transport: 'stdio'; server: Opened['stdio_servers'][number] };

/** Every server with its name, in a stable order (sse, streamable HTTP, stdio; each as stored). */
export function namedServers(mcp: Opened | null): NamedServer[] {
  if (!mcp) return [];
  const taken = new Set<string>([...mcp.sse_servers, ...mcp.shttp_servers].flatMap((s) => (s.name ? [s.name] : [])));
  for (const s of mcp.stdio_servers) taken.add(s.name);
  const fresh = (base: string) => {
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    return name;
  };
  return [
    ...mcp.sse_servers.map((server, i) => ({ name: server.name ?? fresh(`sse_${i}`), transport: 'sse' as const, server })),
    ...mcp.shttp_servers.map((server, i) => ({ name: server.name ?? fresh(`shttp_${i}`), transport: 'http' as const, server })),
    ...mcp.stdio_servers.map((server) => ({ name: server.name, transport: 'stdio' as const, server })),
  ];
}

/** The 2026 map as shown: the values are what the walk put there (the mask, for a response). */
export function serverMap(mcp: Opened | null): Record<string, McpServer> {
  return Object.fromEntries(namedServers(mcp).map((named) => [named.name, shown(named)]));
}

function shown(named: NamedServer): McpServer {
  const { transport: declared, enabled, ...extras } = (named.server.extras ?? {}) as { transport?: string; enabled?: boolean };
  if (named.transport === 'stdio') {
    const s = named.server;
    return {
      command: s.command,
      args: s.args,
      env: s.env as Record<string, string>,
      ...(declared ? { transport: declared } : {}),
      ...extras,
      enabled: enabled ?? true,
    };
  }
  const s = named.server;
  const headers = s.headers && Object.keys(s.headers).length > 0 ? { headers: s.headers as Record<string, string> } : {};
  return {
    url: s.url,
    transport: declared ?? named.transport,
    ...extras,
    ...(s.timeout ? { timeout: s.timeout } : {}),
    ...headers,
    ...(s.api_key ? { auth: { strategy: 'bearer' as const, value: s.api_key } } : {}),
    enabled: enabled ?? true,
  };
}

/** What an agent server runs (the SDK's {name: MCPServer}): enabled servers only, a key as its header. */
export function agentServerMap(mcp: Opened | null): Record<string, Record<string, unknown>> {
  const servers: Record<string, Record<string, unknown>> = {};
  for (const named of namedServers(mcp)) {
    const extras = named.server.extras ?? {};
    if (extras.enabled === false) continue;
    const runtime = pick(extras, ['cwd', 'sse_read_timeout', 'keep_alive']);
    if (named.transport === 'stdio') {
      servers[named.name] = { command: named.server.command, args: named.server.args, env: named.server.env, ...runtime };
      continue;
    }
    const s = named.server;
    const headers = callHeaders(s);
    servers[named.name] = {
      url: s.url,
      transport: named.transport === 'sse' ? 'sse' : 'streamable-http',
      ...(s.timeout ? { timeout: s.timeout } : {}),
      ...runtime,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
    };
  }
  return servers;
}

/** The headers a call to a remote server carries: its own, and its key as a bearer token (a missing value left out). */
export function callHeaders(server: Pick<RemoteWith<string | null>, 'headers' | 'api_key'>): Record<string, string> {
  const headers = { ...(server.headers ?? {}), ...(server.api_key ? { Authorization: `Bearer ${server.api_key}` } : {}) };
  return Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] != null));
}

function pick(from: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((key) => from[key] != null).map((key) => [key, from[key]]));
}
