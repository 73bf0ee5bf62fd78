// Each conversation's route through the gateway (models/llm-route.model.ts): the model and
// upstream its agent was given, its owner's key sealed, and the conversation's gateway token
// (its SHA-256 only). The agent in the sandbox holds the token, never the key; the token opens
// only this conversation's calls, and only while the route and its sandbox exist. Routes are
// read per call through a short cache: a switch or delete made on another replica reaches
// this one within ROUTE_TTL_MS.
import type { Models } from '../../models/index.js';
import { randomBase62, secretsEqual, sha256, type SecretBox } from '../crypto.js';
import { isDuplicateKeyError } from '../errors.js';

const TOKEN_PREFIX = 'ohg_';
const ROUTE_TTL_MS = 2_000;
const MAX_CACHED = 10_000;

/** What the agent's LLM is given instead of its owner's: the gateway's model, base URL and token. */
export interface LlmUpstream {
  model: string;
  baseUrl: string | null;
  apiKey: string | null;
  /** Remote MCP servers the agent reaches through the gateway (their keys stay here); a profile switch keeps them. */
  mcp?: McpUpstream[];
}

/** A remote MCP server by the name the agent's config gives it (sse_0, shttp_1, or its own); its credentials stay here. */
export interface McpUpstream {
  name: string;
  url: string;
  apiKey: string | null;
  /** Header credentials saved with the server (2026 settings), swapped in like the key. */
  headers?: Record<string, string>;
}

export interface LlmRoute {
  /** The conversation its calls count against (a sandbox route's: the one reported in its sandbox, llm-gateway.service.ts). */
  conversationId: string;
  /** The route's own id where it is not the conversation's (a sandbox route's), which holds its totals. */
  routeId?: string;
  userId: string;
  sandboxId: string;
  model: string;
  baseUrl: string | null;
  /** Opened only where a call is forwarded. */
  sealedKey: string | null;
  mcp: { name: string; url: string; sealedKey: string | null; sealedHeaders: string | null }[];
}

export interface LlmTotals {
  cost: number;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

/**
 * The route of a sandbox rather than of a conversation: an automation run's code asked for its LLM
 * (src/automations/run-settings.ts) before its agent server had a conversation; the gateway counts
 * its calls against the conversation that agent server reports in the sandbox (llm-gateway.service.ts).
 */
export const sandboxRouteId = (sandboxId: string) => `sandbox-${sandboxId}`;
export const isSandboxRoute = (routeId: string) => routeId.startsWith('sandbox-');

const keyContext = (conversationId: string) => `llm-route:${conversationId}:api_key`;
const tokenContext = (conversationId: string) => `llm-route:${conversationId}:token`;
const mcpKeyContext = (conversationId: string, name: string) => `llm-route:${conversationId}:mcp:${name}`;
const mcpHeadersContext = (conversationId: string, name: string) => `llm-route:${conversationId}:mcp-headers:${name}`;
const tokenHash = (token: string) => sha256(token).toString('hex');

export class LlmRoutes {
  private readonly cache = new Map<string, { route: (LlmRoute & { tokenHash: string }) | null; at: number }>();

  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The conversation's route, made or pointed at a new upstream, with the token its agent
   * presents: the same token for a retried start (its agent-server conversation may exist already).
   */
  async open(conversationId: string, owner: { userId: string; sandboxId: string }, upstream: LlmUpstream): Promise<string> {
    const set = { ...this.fieldsOf(conversationId, upstream), sandboxId: owner.sandboxId, updatedAt: new Date() };
    for (;;) {
      // No projection: FerretDB's findAndModify takes none.
      const existing = await this.models.LlmRoute.findOneAndUpdate(
        { _id: conversationId, userId: owner.userId },
        { $set: set },
        { new: true },
      ).lean<{ token: string }>();
      this.cache.delete(conversationId);
      if (existing) return this.box.decrypt(existing.token, tokenContext(conversationId));
      const token = `${TOKEN_PREFIX}${conversationId}_${randomBase62(40)}`;
      try {
        await this.models.LlmRoute.create({
          _id: conversationId,
          userId: owner.userId,
          ...set,
          tokenHash: tokenHash(token),
          token: this.box.encrypt(token, tokenContext(conversationId)),
        });
        return token;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error; // made meanwhile by a retried start: use its token
      }
    }
  }

  /** Points an existing route at another model or upstream (a profile switch); false when there is none. */
  async switchTo(conversationId: string, userId: string, upstream: LlmUpstream): Promise<boolean> {
    const result = await this.models.LlmRoute.updateOne(
      { _id: conversationId, userId },
      { $set: { ...this.fieldsOf(conversationId, upstream), updatedAt: new Date() } },
    );
    this.cache.delete(conversationId);
    return result.matchedCount === 1;
  }

  /** The route a presented token opens, or null (malformed, unknown, replaced or deleted). */
  async byToken(token: string | undefined): Promise<LlmRoute | null> {
    const conversationId = token?.startsWith(TOKEN_PREFIX) ? token.slice(TOKEN_PREFIX.length, token.lastIndexOf('_')) : '';
    if (!conversationId || !/^[\w-]{1,100}$/.test(conversationId)) return null;
    const route = await this.cached(conversationId);
    return route && secretsEqual(tokenHash(token!), route.tokenHash) ? route : null;
  }

  /** Whether the conversation's LLM goes through the gateway (its agent's own cost reports are then not counted). */
  async has(conversationId: string): Promise<boolean> {
    return (await this.cached(conversationId)) !== null;
  }

  openKey(route: LlmRoute): string | null {
    return route.sealedKey === null ? null : this.box.decrypt(route.sealedKey, keyContext(route.routeId ?? route.conversationId));
  }

  /** A remote MCP server of the route, with its key opened; null when it has none of that name. */
  mcpServer(route: LlmRoute, name: string): McpUpstream | null {
    const server = route.mcp.find((s) => s.name === name);
    if (!server) return null;
    const apiKey = server.sealedKey ? this.box.decrypt(server.sealedKey, mcpKeyContext(route.conversationId, name)) : null;
    const headers = server.sealedHeaders
      ? (JSON.parse(this.box.decrypt(server.sealedHeaders, mcpHeadersContext(route.conversationId, name))) as Record<string, string>)
      : undefined;
    return { name, url: server.url, apiKey, ...(headers ? { headers } : {}) };
  }

  /** Adds calls' usage (`calls`: how many); the conversation's totals after it. */
  async add(conversationId: string, usage: LlmTotals): Promise<LlmTotals | null> {
    const totals = await this.models.LlmRoute.findOneAndUpdate(
      { _id: conversationId },
      { $inc: usage, $set: { updatedAt: new Date() } },
      { new: true },
    ).lean<LlmTotals>();
    return totals;
  }

  async totals(conversationId: string): Promise<LlmTotals | null> {
    return this.models.LlmRoute.findById(conversationId, TOTALS).lean<LlmTotals>();
  }

  /** Ends the routes of a sandbox (deleted) or of one conversation (deleted): their tokens open nothing. */
  async close(by: { sandboxId: string } | { conversationId: string }): Promise<void> {
    if ('sandboxId' in by) await this.models.LlmRoute.deleteMany({ sandboxId: by.sandboxId });
    else await this.models.LlmRoute.deleteOne({ _id: by.conversationId });
    this.cache.clear();
  }

  private fieldsOf(conversationId: string, upstream: LlmUpstream) {
    return {
      model: upstream.model,
      baseUrl: upstream.baseUrl,
      apiKey: upstream.apiKey ? this.box.encrypt(upstream.apiKey, keyContext(conversationId)) : null,
      ...(upstream.mcp
        ? {
            mcp: upstream.mcp.map((server) => ({
              name: server.name,
              url: server.url,
              ...(server.apiKey ? { apiKey: this.box.encrypt(server.apiKey, mcpKeyContext(conversationId, server.name)) } : {}),
              ...(server.headers && Object.keys(server.headers).length > 0
                ? { headers: this.box.encrypt(JSON.stringify(server.headers), mcpHeadersContext(conversationId, server.name)) }
                : {}),
            })),
          }
        : {}),
    };
  }

  private async cached(conversationId: string): Promise<(LlmRoute & { tokenHash: string }) | null> {
    const hit = this.cache.get(conversationId);
    if (hit && this.now() - hit.at < ROUTE_TTL_MS) return hit.route;
    const record = await this.models.LlmRoute.findById(conversationId, {
      userId: 1,
      sandboxId: 1,
      model: 1,
      baseUrl: 1,
      apiKey: 1,
      tokenHash: 1,
      mcp: 1,
    }).lean<{
      _id: string;
      userId: string;
      sandboxId: string;
      model: string;
      baseUrl: string | null;
      apiKey: string | null;
      tokenHash: string;
      mcp?: { name: string; url: string; apiKey?: string | null; headers?: string | null }[];
    }>();
    const route = record
      ? {
          conversationId,
          userId: record.userId,
          sandboxId: record.sandboxId,
          model: record.model,
          baseUrl: record.baseUrl,
          sealedKey: record.apiKey,
          mcp: (record.mcp ?? []).map((m) => ({ name: m.name, url: m.url, sealedKey: m.apiKey ?? null, sealedHeaders: m.headers ?? null })),
          tokenHash: record.tokenHash,
        }
      : null;
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(conversationId, { route, at: this.now() });
    return route;
  }
}

const TOTALS = {
  _id: 0,
  cost: 1,
  calls: 1,
  promptTokens: 1,
  completionTokens: 1,
  cacheReadTokens: 1,
  cacheWriteTokens: 1,
  reasoningTokens: 1,
} as const;
