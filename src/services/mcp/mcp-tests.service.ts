// Testing an MCP server from the settings page (docs/api.md "MCP servers"): a server as typed in
// the form (POST /api/v1/mcp/test, the answer in full) or one already stored, by its name
// (POST /api/v1/settings/mcp/{key}/test, only {ok}: nothing of the server's answer leaves).
// stdio servers run inside a sandbox and are not started here. Tests per user are bounded
// (MCP_TESTS_PER_MINUTE): each one makes this service connect out.
import { SECRET_MASK } from '../../../contract/common.schema.js';
import { type McpServerInput, type McpTestInput, remoteCredentials, transportOf } from '../../../contract/mcp-servers.schema.js';
import { AppError } from '../../errors.js';
import { rateLimited, TokenBuckets } from '../../rate-limit.js';
import { callHeaders, namedServers, type NamedServer } from '../settings/mcp-servers.js';
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
    const stored = (await this.storedServers(userId)).find((named) => named.name === input.name);
    const target = targetOf(input.server, stored && stored.transport !== 'stdio' ? stored.server : undefined);
    return this.probe.probe(target, input.timeout * 1000, input.tool_call ?? null);
  }

  /** A stored server, by its name: only whether it answered. */
  async testStored(userId: string, key: string, timeoutSeconds: number): Promise<{ ok: boolean }> {
    const named = (await this.storedServers(userId)).find((server) => server.name === key);
    if (!named) throw new AppError('NOT_FOUND', 'MCP server was not found', { reason: 'mcp_server_not_found' });
    if (named.transport === 'stdio') throw stdioRefused();
    this.take(userId);
    try {
      const result = await this.probe.probe(
        { transport: named.transport, url: named.server.url, headers: callHeaders(named.server) },
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

type StoredRemote = Extract<NamedServer, { transport: 'sse' | 'http' }>['server'];

/** The connection a sent server asks for: its credentials, a masked value being the stored server's. */
function targetOf(server: McpServerInput, stored: StoredRemote | undefined): ProbeTarget {
  const unmask = (value: string | null, kept: string | null | undefined) => (value === SECRET_MASK ? (kept ?? null) : value);
  const { apiKey, headers } = remoteCredentials(server);
  const sent = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, unmask(value, stored?.headers?.[name])]));
  const transport = transportOf(server) === 'sse' ? 'sse' : 'http';
  return { transport, url: server.url!, headers: callHeaders({ headers: sent, api_key: unmask(apiKey, stored?.api_key) }) };
}
