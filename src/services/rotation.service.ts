// Re-encrypts every stored secret under the current ENCRYPTION_KEY. Run after adding a new
// key with the old one in ENCRYPTION_KEY_PREVIOUS; afterwards the old key can be dropped.
import type { Models } from '../../models/index.js';
import type { SecretBox } from '../crypto.js';
import { tokenContext } from './git-providers.service.js';
import { secretValueContext } from './secrets.service.js';
import { mcpContext, secretContext } from './settings.service.js';

export async function reencryptAll(models: Models, box: SecretBox): Promise<{ documents: number; values: number }> {
  let documents = 0;
  let values = 0;
  const rewrap = (value: unknown, context: string): unknown => {
    if (typeof value !== 'string' || box.isCurrent(value)) return value;
    values++;
    return box.encrypt(box.decrypt(value, context), context);
  };

  for await (const doc of models.Settings.find({}).lean().cursor()) {
    const userId = doc.userId;
    const set: Record<string, unknown> = {};
    for (const field of ['llm_api_key', 'search_api_key', 'sandbox_api_key'] as const) {
      if (doc[field]) set[field] = rewrap(doc[field], secretContext(userId, field));
    }
    const mcp = doc.mcp_config as
      | {
          sse_servers?: { api_key?: string | null }[];
          shttp_servers?: { api_key?: string | null }[];
          stdio_servers?: { env?: Record<string, string> }[];
        }
      | null
      | undefined;
    if (mcp) {
      const ctx = mcpContext(userId);
      for (const s of [...(mcp.sse_servers ?? []), ...(mcp.shttp_servers ?? [])]) s.api_key = rewrap(s.api_key, ctx) as string | null;
      for (const s of mcp.stdio_servers ?? []) {
        for (const key of Object.keys(s.env ?? {})) s.env![key] = rewrap(s.env![key], ctx) as string;
      }
      set.mcp_config = mcp;
    }
    await models.Settings.updateOne({ _id: doc._id }, { $set: set });
    documents++;
  }

  for await (const doc of models.GitProviderTokens.find({}).lean().cursor()) {
    const tokens = (doc.tokens ?? {}) as Record<string, { token: string } | null | undefined>;
    for (const [provider, entry] of Object.entries(tokens)) {
      if (entry?.token) entry.token = rewrap(entry.token, tokenContext(doc.userId, provider)) as string;
    }
    await models.GitProviderTokens.updateOne({ _id: doc._id }, { $set: { tokens } });
    documents++;
  }

  for await (const doc of models.CustomSecret.find({}).lean().cursor()) {
    await models.CustomSecret.updateOne({ _id: doc._id }, { $set: { value: rewrap(doc.value, secretValueContext(doc.userId)) } });
    documents++;
  }
  return { documents, values };
}
