// Testing an MCP server from the settings page (docs/api.md "MCP servers"): a server as typed in
// the form (POST /api/v1/mcp/test, the answer in full) or one already stored, by its name
// (POST /api/v1/settings/mcp/{key}/test, only {ok}: nothing of the server's answer leaves).
// stdio servers run inside a sandbox and are not started here. Tests per user are bounded
// (MCP_TESTS_PER_MINUTE): each one makes this service connect out.
import { SECRET_MASK } from '../../../contract/common.schema.js';
import { type McpServerInput, type McpTestInput, transportOf } from '../../../contract/mcp-servers.schema.js';
import { AppError } from '../../errors.js';
import { rateLimited, TokenBuckets } from '../../rate-limit.js';
import { namedServers, type NamedServer } from '../settings/mcp-servers.js';
import type { SettingsService } from '../settings/settings.service.js';
import { McpProbe, type ProbeResult, type ProbeTarget } from './mcp-probe.js';
import { ProviderHostPolicy } from '../../git/providers/provider-hosts.js';
import type { Config } from '../../config/config.js';

const STDIO_REFUSED = 'stdio MCP servers run inside the sandbox and cannot be tested from the settings page.';

export class McpTestsService {
  private readonly buckets: TokenBuckets;

  constructor(
    private readonly settings: SettingsService,
    private readonly probe: McpProbe,
    perMinute: number,
  ) {
    this.buckets = new TokenBuckets(perMinute, 60_000);
  }

  /** As configured: MCP_TEST_HOSTS (the SSRF rules, no trusted roots) and MCP_TESTS_PER_MINUTE. */
  static create(settings: SettingsService, config: Config['mcpTests']): McpTestsService {
    return new McpTestsService(settings, new McpProbe(new ProviderHostPolicy(config.allowedHosts, [])), config.perMinute);
  }

  /** A server as sent; a masked credential is the stored server's of that name (the form shows masks). */
  async test(userId: string, input: McpTestInput): Promise<ProbeResult> {
    if (transportOf(input.server) === 'stdio') throw stdioRefused();
    this.take(userId);
    const stored = (await this.storedServers(userId)).find((named) => named.name === input.name && named.transport !== 'stdio');
    const target = targetOf(input.server, stored?.transport === 'stdio' ? undefined : stored?.server);
    return this.probe.probe(target, input.timeout * 1000, input.tool_call ?? null);
  }

  /** A stored server, by its name: only whether it answered. */
  async testStored(userId: string, key: string, timeoutSeconds: number): Promise<{ ok: boolean }> {
    const named = (await this.storedServers(userId)).find((server) => server.name === key);
    if (!named) throw new AppError('NOT_FOUND', 'MCP server was not found', { reason: 'mcp_server_not_found' });
    if (named.transport === 'stdio') throw stdioRefused();
    this.take(userId);
    const server = named.server;
    const headers = { ...(server.headers ?? {}), ...(server.api_key ? { Authorization: `Bearer ${server.api_key}` } : {}) };
    try {
      const result = await this.probe.probe(
        { transport: named.transport, url: server.url, headers: opened(headers) },
        timeoutSeconds * 1000,
      );
      return { ok: result.ok };
    } catch {
      // The probe answers every failure of the server itself; this is a fault of ours.
      throw new AppError('SERVICE_UNAVAILABLE', 'MCP validation is temporarily unavailable', { reason: 'mcp_test_unavailable' });
    }
  }

  private take(userId: string): void {
    const taken = this.buckets.take(userId);
    if (!taken.ok) throw rateLimited(taken.retryAfterSeconds);
  }

  private async storedServers(userId: string): Promise<NamedServer[]> {
    const stored = await this.settings.stored(userId);
    return stored ? namedServers(this.settings.openMcp(userId, stored.record)) : [];
  }
}

function stdioRefused(): AppError {
  return new AppError('UNPROCESSABLE_CONTENT', STDIO_REFUSED, { reason: 'mcp_stdio_not_testable' });
}

function opened(headers: Record<string, string | null>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== null));
}

type StoredRemote = Extract<NamedServer, { transport: 'sse' | 'http' }>['server'];

/** The connection a sent server asks for: its headers and auth, a masked value filled from the stored server. */
function targetOf(server: McpServerInput, stored: StoredRemote | undefined): ProbeTarget {
  const storedHeader = (name: string) => stored?.headers?.[name] ?? null;
  const unmask = (value: string | null | undefined, kept: string | null) => (value === SECRET_MASK ? kept : (value ?? null));
  const headers: Record<string, string | null> = {};
  for (const [name, value] of Object.entries(server.headers ?? {})) headers[name] = unmask(value, storedHeader(name));
  const auth = server.auth;
  if (auth?.strategy === 'bearer' || (auth?.strategy === 'api_key' && !auth.header_name)) {
    const key = unmask(auth.value, stored?.api_key ?? null);
    if (key) headers.Authorization = `Bearer ${key}`;
  } else if (auth?.strategy === 'api_key' && auth.value != null) {
    headers[auth.header_name!] = unmask(auth.value, storedHeader(auth.header_name!));
  } else if (auth?.strategy === 'header') {
    for (const [name, value] of Object.entries(auth.headers)) headers[name] = unmask(value, storedHeader(name));
  }
  const transport = transportOf(server);
  return { transport: transport === 'sse' ? 'sse' : 'http', url: server.url!, headers: opened(headers) };
}
